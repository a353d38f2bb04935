/**
 * Live mode: calls change and arrive while the sandbox runs; an ascending traversal still meets every
 * record (changed ones again, at its end).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type RunningSandbox } from '../../src/index.js';
import { SandboxTestClient, uidsOf } from './client.js';

async function until(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('live mode', () => {
  let sandbox: RunningSandbox;
  let client: SandboxTestClient;

  beforeAll(async () => {
    sandbox = await startSandbox({
      data: { seed: 41, locations: 2, callsPerLocation: 300 },
      live: { updatesPerSecond: 400, createsPerSecond: 100 },
    });
    client = new SandboxTestClient(sandbox);
  });
  afterAll(async () => {
    await client.close();
    await sandbox.close();
  });

  it('updates existing calls and creates new ones with updatedAt from the sandbox clock', async () => {
    const start = sandbox.admin.now().getTime();
    await until(() => sandbox.admin.stats().live.updates >= 20 && sandbox.admin.stats().live.creates >= 5);
    const recent = sandbox.locations
      .flatMap((l) => sandbox.admin.truth(l))
      .filter((c) => Date.parse(c.updatedAt) >= start);
    expect(recent.length).toBeGreaterThan(0);
  });

  it('never loses a record from an ascending traversal while records change under it', async () => {
    const location = sandbox.locations[0] as string;
    const before = sandbox.admin.truth(location).map((c) => c.uid);
    const { accessToken } = sandbox.issueTokens();
    const pages = [];
    let reply = await client.list(accessToken, { locationUid: location, limit: 20 });
    for (let i = 0; i < 500; i++) {
      pages.push(reply.page);
      const cursor = reply.page.metadata.nextCursor;
      if (cursor === null) break;
      // Let live mode change records between pages.
      const updates = sandbox.admin.stats().live.updates;
      await until(() => sandbox.admin.stats().live.updates > updates);
      reply = await client.list(accessToken, { cursor, limit: 20 });
    }
    const seen = new Set(uidsOf(pages));
    expect(before.filter((u) => !seen.has(u))).toEqual([]);
  });
});
