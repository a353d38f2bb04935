import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type RunningSandbox } from '../../../src/sandbox/index.js';
import { SandboxTestClient, uidsOf } from './client.js';

describe('sandbox over HTTPS', () => {
  let sandbox: RunningSandbox;
  let client: SandboxTestClient;

  beforeAll(async () => {
    sandbox = await startSandbox({ data: { seed: 7, locations: 2, callsPerLocation: 250 } });
    client = new SandboxTestClient(sandbox);
  });
  afterAll(async () => {
    await client.close();
    await sandbox.close();
  });

  it('serves a generated certificate that clients trust through the written CA file', async () => {
    expect(sandbox.baseUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(sandbox.caFile).not.toBeNull();
    const reply = await client.get('/v4/calls');
    expect(reply.status).toBe(401);
  });

  it('lists exactly the ground truth of a location when the cursor is followed to the end', async () => {
    const { accessToken } = sandbox.issueTokens();
    const location = sandbox.locations[0] as string;
    const pages = await client.listAll(accessToken, { locationUid: location, limit: 100 });
    expect(uidsOf(pages)).toEqual(sandbox.admin.truth(location).map((c) => c.uid));
  });
});
