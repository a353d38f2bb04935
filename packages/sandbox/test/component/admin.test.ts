/**
 * The admin endpoint under /_sandbox/ (sandbox-only): ground truth, calls, clock, tokens, faults, stats.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type RunningSandbox, type SandboxCall } from '../../src/index.js';
import { SandboxTestClient, uidsOf, type Reply } from './client.js';

describe('admin endpoint', () => {
  let sandbox: RunningSandbox;
  let client: SandboxTestClient;

  beforeAll(async () => {
    sandbox = await startSandbox({ data: { seed: 31, locations: 2, callsPerLocation: 40 } });
    client = new SandboxTestClient(sandbox);
  });
  afterAll(async () => {
    await client.close();
    await sandbox.close();
  });

  const location = (): string => sandbox.locations[0] as string;

  it('lists the locations and serves the ground truth of one', async () => {
    expect((await client.get('/_sandbox/locations')).json).toEqual({ data: sandbox.locations });
    const truth = await client.get(`/_sandbox/truth?locationUid=${location()}`);
    expect(truth.status).toBe(200);
    expect((truth.json as { data: SandboxCall[] }).data).toEqual(sandbox.admin.truth(location()));
  });

  it('adds a call stamped with the sandbox clock, listed last in ascending order', async () => {
    const reply = await client.postJson('/_sandbox/calls', { locationUid: location(), isPrivate: true });
    expect(reply.status).toBe(200);
    const call = (reply.json as { data: SandboxCall }).data;
    expect(call.updatedAt).toBe(sandbox.admin.now().toISOString().slice(0, 20) + call.updatedAt.slice(20));
    const { accessToken } = sandbox.issueTokens();
    const pages = await client.listAll(accessToken, { locationUid: location(), limit: 100 });
    expect(uidsOf(pages).at(-1)).toBe(call.uid);
  });

  it('updates a call: its updatedAt moves to now and it moves to the end of the truth', async () => {
    const first = sandbox.admin.truth(location())[0] as SandboxCall;
    const reply = await client.postJson('/_sandbox/calls', {
      uid: first.uid,
      customerPhoneNumber: '+15550001111',
    });
    expect(reply.status).toBe(200);
    const truth = sandbox.admin.truth(location());
    expect(truth.at(-1)).toMatchObject({ uid: first.uid, customerPhoneNumber: '+15550001111' });
    expect(Date.parse((truth.at(-1) as SandboxCall).updatedAt)).toBeGreaterThan(Date.parse(first.updatedAt));
  });

  it('imports many calls of one location at one instant, all listed together after it', async () => {
    const reply = await client.postJson('/_sandbox/calls/import', { locationUid: location(), count: 7 });
    expect(reply.status).toBe(200);
    const imported = (reply.json as { data: SandboxCall[] }).data;
    expect(imported).toHaveLength(7);
    expect(new Set(imported.map((c) => c.updatedAt)).size).toBe(1);
    expect(new Set(imported.map((c) => c.uid)).size).toBe(7);
    const truth = sandbox.admin.truth(location());
    expect(new Set(truth.slice(-7).map((c) => c.uid))).toEqual(new Set(imported.map((c) => c.uid)));
    expect(
      (await client.postJson('/_sandbox/calls/import', { locationUid: location(), count: 0 })).status,
    ).toBe(400);
  });

  it('rejects bad call input with 400 invalid_request', async () => {
    expect(
      (await client.postJson('/_sandbox/calls', { locationUid: '00000000-0000-4000-8000-000000000000' }))
        .status,
    ).toBe(400);
    expect(
      (await client.postJson('/_sandbox/calls', { locationUid: location(), isPrivate: 'yes' })).status,
    ).toBe(400);
  });

  it('advances the clock', async () => {
    const before = Date.parse(((await client.get('/_sandbox/clock')).json as { now: string }).now);
    const reply = await client.postJson('/_sandbox/clock/advance', { ms: 3_600_000 });
    expect(Date.parse((reply.json as { now: string }).now) - before).toBeGreaterThanOrEqual(3_600_000);
  });

  it('issues tokens and revokes them', async () => {
    const issued = (await client.postJson('/_sandbox/tokens', { locations: [location()] })).json as Record<
      string,
      string
    >;
    expect((await client.get('/v4/calls?limit=1', issued.access_token)).status).toBe(200);
    const revoked = await client.postJson('/_sandbox/tokens/revoke', {});
    expect((revoked.json as { revoked: { accessTokens: number } }).revoked.accessTokens).toBeGreaterThan(0);
    expect((await client.get('/v4/calls?limit=1', issued.access_token)).status).toBe(401);
  });

  it('reads and changes faults at run time, refusing invalid values', async () => {
    const put = await client.send('PUT', '/_sandbox/faults', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ serverErrorRate: 0.5, latency: { medianMs: 1, p99Ms: 2 } }),
    });
    expect(put.status).toBe(200);
    expect((await client.get('/_sandbox/faults')).json).toMatchObject({
      data: { serverErrorRate: 0.5, latency: { medianMs: 1, p99Ms: 2 } },
    });
    const bad = await client.send('PUT', '/_sandbox/faults', {
      headers: { 'content-type': 'application/json' },
      body: '{"rateLimitRate":3}',
    });
    expect(bad.status).toBe(400);
    sandbox.admin.setFaults({ serverErrorRate: 0, latency: null });
  });

  it('starts and stops live mode at run time', async () => {
    const put = (body: string): Promise<Reply> =>
      client.send('PUT', '/_sandbox/live', { headers: { 'content-type': 'application/json' }, body });
    expect((await put('{"updatesPerSecond":500,"createsPerSecond":0}')).status).toBe(200);
    const deadline = Date.now() + 10_000;
    while (sandbox.admin.stats().live.updates === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(sandbox.admin.stats().live.updates).toBeGreaterThan(0);
    expect((await put('false')).status).toBe(200);
    expect((await put('{"updatesPerSecond":-1,"createsPerSecond":0}')).status).toBe(400);
  });

  it('reports request counters', async () => {
    const before = sandbox.admin.stats();
    await client.postJson('/oauth/token', {});
    const stats = (await client.get('/_sandbox/stats')).json as {
      data: ReturnType<RunningSandbox['admin']['stats']>;
    };
    expect(stats.data.tokenRequests).toBe(before.tokenRequests + 1);
    expect(stats.data.requests).toBeGreaterThan(before.requests);
    expect(stats.data.byStatus['400']).toBeGreaterThan(0);
  });
});

describe('admin endpoint with an admin key', () => {
  it('requires the key in X-Sandbox-Admin-Key', async () => {
    const sandbox = await startSandbox({
      adminKey: 'k3y',
      data: { seed: 1, locations: 1, callsPerLocation: 1 },
    });
    const client = new SandboxTestClient(sandbox);
    try {
      expect((await client.get('/_sandbox/stats')).status).toBe(401);
      const wrong = await client.send('GET', '/_sandbox/stats', {
        headers: { 'x-sandbox-admin-key': 'nope' },
      });
      expect(wrong.status).toBe(401);
      const right = await client.send('GET', '/_sandbox/stats', {
        headers: { 'x-sandbox-admin-key': 'k3y' },
      });
      expect(right.status).toBe(200);
    } finally {
      await client.close();
      await sandbox.close();
    }
  });
});
