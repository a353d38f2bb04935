/**
 * Access to the calls endpoints: the bearer token, its scope (read_phones, spec 5 step 8) and its
 * locations.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type RunningSandbox } from '../../src/index.js';
import { SandboxTestClient } from './client.js';

describe('calls endpoints access control', () => {
  let sandbox: RunningSandbox;
  let client: SandboxTestClient;
  let uidInSecondLocation: string;

  beforeAll(async () => {
    sandbox = await startSandbox({ data: { seed: 8, locations: 2, callsPerLocation: 20 } });
    client = new SandboxTestClient(sandbox);
    uidInSecondLocation = (sandbox.admin.truth(sandbox.locations[1] as string)[0] as { uid: string }).uid;
  });
  afterAll(async () => {
    await client.close();
    await sandbox.close();
  });

  it('answers 401 invalid_token with a Bearer challenge when the token is missing or unknown', async () => {
    for (const reply of [await client.get('/v4/calls'), await client.get('/v4/calls', 'sbx_at_unknown')]) {
      expect(reply.status).toBe(401);
      expect(reply.json).toMatchObject({ error: { code: 'invalid_token' } });
      expect(reply.headers['www-authenticate']).toMatch(/^Bearer /);
    }
  });

  it('accepts the Bearer scheme in any letter case', async () => {
    const { accessToken } = sandbox.issueTokens();
    const reply = await client.send('GET', '/v4/calls?limit=1', {
      headers: { authorization: `bearer ${accessToken}` },
    });
    expect(reply.status).toBe(200);
  });

  it('answers 403 insufficient_scope to a token without read_phones', async () => {
    const { accessToken } = sandbox.issueTokens({ scopes: ['read_reviews'] });
    const list = await client.get('/v4/calls', accessToken);
    expect(list.status).toBe(403);
    expect(list.json).toMatchObject({ error: { code: 'insufficient_scope' } });
    expect((await client.get(`/v4/calls/${uidInSecondLocation}`, accessToken)).status).toBe(403);
  });

  it('answers 403 location_forbidden for a location outside the token, in the listing and the single call', async () => {
    const { accessToken } = sandbox.issueTokens({ locations: [sandbox.locations[0] as string] });
    const list = await client.list(accessToken, { locationUid: sandbox.locations[1] as string });
    expect(list.status).toBe(403);
    expect(list.json).toMatchObject({ error: { code: 'location_forbidden' } });
    const single = await client.get(`/v4/calls/${uidInSecondLocation}`, accessToken);
    expect(single.status).toBe(403);
  });

  it('lists only the locations of the token when no locationUid is given', async () => {
    const first = sandbox.locations[0] as string;
    const { accessToken } = sandbox.issueTokens({ locations: [first] });
    const pages = await client.listAll(accessToken, { limit: 100 });
    expect(pages.flatMap((p) => p.data).every((i) => i.locationUid === first)).toBe(true);
  });

  it('rejects a locationUid that is not a uuid with 400 invalid_request', async () => {
    const { accessToken } = sandbox.issueTokens();
    const reply = await client.list(accessToken, { locationUid: 'not-a-uuid' });
    expect(reply.status).toBe(400);
  });

  it('answers 401 invalid_token once tokens are revoked', async () => {
    const { accessToken } = sandbox.issueTokens();
    sandbox.admin.revokeTokens({ accessTokens: true, refreshTokens: false });
    const reply = await client.get('/v4/calls', accessToken);
    expect(reply.status).toBe(401);
    expect(reply.json).toMatchObject({ error: { code: 'invalid_token' } });
  });
});
