import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { HttpTransport } from '../../../src/api/http-transport.js';
import { DEFAULT_FAULTS, startSandbox, type RunningSandbox } from '../../../packages/sandbox/src/index.js';
import { testMetrics } from '../../support/metrics.js';
import type { MappedItem } from '../../../src/sync/model.js';
import { InvalidCursorError } from '../../../src/sync/ports.js';
import { counterValue } from '../../support/counters.js';
import {
  sandboxClient,
  SandboxTokens,
  type SandboxClientHarness,
} from '../../support/sync/sandbox-harness.js';

let sandbox: RunningSandbox;
let harness: SandboxClientHarness;
let location: string;

beforeAll(async () => {
  sandbox = await startSandbox({
    data: { locations: 2, callsPerLocation: 120, sameInstantGroups: { count: 1, size: 30 } },
  });
  location = sandbox.locations[0] ?? '';
  harness = await sandboxClient(sandbox, { pageSize: 25 });
});

afterEach(() => sandbox.admin.setFaults(DEFAULT_FAULTS));

afterAll(async () => {
  await harness.close();
  await sandbox.close();
});

const first = (limit = 25, since: string | null = null) =>
  ({ kind: 'first', locationUid: location, since, order: 'asc', limit }) as const;

async function listAll(h: SandboxClientHarness, limit = 25): Promise<MappedItem[]> {
  const items: MappedItem[] = [];
  let page = await h.client.listPage(first(limit));
  items.push(...page.items);
  while (page.nextCursor !== null) {
    page = await h.client.listPage({ kind: 'next', locationUid: location, cursor: page.nextCursor, limit });
    items.push(...page.items);
  }
  return items;
}

const uids = (items: MappedItem[]) => items.map((i) => (i.ok ? i.call.uid : i.position?.uid));

describe('CallsApiClient against the sandbox over HTTPS', () => {
  it('pages through a location to the end, returning exactly the listable calls in order', async () => {
    const items = await listAll(harness);
    expect(uids(items)).toEqual(sandbox.admin.truth(location).map((c) => c.uid));
  });

  it('gets a single call with its enrichment fields, and null for an unknown uid', async () => {
    const truth = sandbox.admin.truth(location)[0];
    const call = await harness.client.getCall(truth?.uid ?? '');
    expect(call).toMatchObject({
      version: { kind: 'text', text: truth?.updatedAt },
      enrichment: { ok: true, enrichment: { isPrivate: truth?.isPrivate, startedAt: truth?.startedAt } },
    });
    await expect(harness.client.getCall('no-such-call')).resolves.toBeNull();
  });

  it('refuses a server whose certificate it cannot verify', async () => {
    const transport = new HttpTransport({
      baseUrl: sandbox.baseUrl,
      allowInsecureHttp: false,
      requestTimeoutMs: 5_000,
      maxResponseBytes: 1 << 20,
      requestsPerSecond: 10,
      maxConcurrency: 1,
      metrics: testMetrics(),
    });
    await expect(transport.send({ path: '/v4/calls', query: {}, headers: {} })).rejects.toMatchObject({
      code: 'API_TLS',
      disposition: 'fatal',
    });
    await transport.close();
  });

  it('rides out 5xx, dropped connections and malformed bodies', async () => {
    sandbox.admin.setFaults({
      serverErrorRate: 0.25,
      dropConnectionRate: 0.25,
      malformedJsonRate: 0.25,
      seed: 7,
    });
    const before = sandbox.admin.stats().faults;
    const items = await listAll(harness, 10);
    expect(uids(items)).toEqual(sandbox.admin.truth(location).map((c) => c.uid));
    const after = sandbox.admin.stats().faults;
    const injected = (kind: 'serverErrors' | 'dropped' | 'malformed') => after[kind] - before[kind];
    const retries = async (reason: string) =>
      counterValue(harness.metrics.apiRetries, { endpoint: 'list', reason });
    expect(injected('serverErrors') + injected('dropped') + injected('malformed')).toBeGreaterThan(2);
    // Every injected fault cost exactly one retry, under its own reason.
    expect(await retries('5xx')).toBe(injected('serverErrors'));
    expect(await retries('network')).toBe(injected('dropped'));
    expect(await retries('malformed_body')).toBe(injected('malformed'));
  });

  it('honours Retry-After on 429 and counts it', async () => {
    sandbox.admin.setFaults({ rateLimitRate: 0.3, retryAfterSeconds: 1, seed: 3 });
    const before = await counterValue(harness.metrics.apiRateLimited, { endpoint: 'list' });
    const started = Date.now();
    await listAll(harness, 100);
    const limited = (await counterValue(harness.metrics.apiRateLimited, { endpoint: 'list' })) - before;
    expect(limited).toBeGreaterThan(0);
    expect(Date.now() - started).toBeGreaterThanOrEqual(limited * 1000 - 50);
  });

  it('reports an expired cursor as InvalidCursorError', async () => {
    sandbox.admin.setFaults({ cursorTtlMs: 1_000 });
    const page = await harness.client.listPage(first());
    sandbox.admin.advanceClock(5_000);
    await expect(
      harness.client.listPage({
        kind: 'next',
        locationUid: location,
        cursor: page.nextCursor ?? '',
        limit: 25,
      }),
    ).rejects.toBeInstanceOf(InvalidCursorError);
  });

  it('keeps a bad request that is not about the cursor fatal', async () => {
    await expect(
      harness.client.listPage({ kind: 'next', locationUid: location, cursor: 'garbage', limit: 25 }),
    ).rejects.toBeInstanceOf(InvalidCursorError);
    await expect(
      harness.client.listPage({
        kind: 'first',
        locationUid: 'not-a-uuid',
        since: null,
        order: 'asc',
        limit: 25,
      }),
    ).rejects.toMatchObject({ disposition: 'fatal' });
  });

  it('refreshes the token once after a 401 and goes on', async () => {
    const tokens = new SandboxTokens(sandbox);
    const own = await sandboxClient(sandbox, { pageSize: 25 }, tokens);
    sandbox.admin.revokeTokens({ accessTokens: true, refreshTokens: false });
    await expect(own.client.listPage(first())).resolves.toMatchObject({
      nextCursor: expect.any(String) as string,
    });
    expect(tokens.refreshes).toBe(1);
    await own.close();
  });

  it('fails with a clear fatal error when the token lacks read_phones', async () => {
    const own = await sandboxClient(sandbox, {}, new SandboxTokens(sandbox, ['read_reviews']));
    await expect(own.client.listPage(first())).rejects.toMatchObject({
      code: 'API_FORBIDDEN',
      message: expect.stringContaining('read_phones') as string,
    });
    await own.close();
  });
});

describe('HttpTransport limits against the sandbox', () => {
  it('starts no more than requestsPerSecond requests in any second', async () => {
    const limited = await sandboxClient(sandbox, { requestsPerSecond: 10, maxConcurrency: 16 });
    const started = Date.now();
    await Promise.all(
      Array.from({ length: 15 }, () =>
        limited.transport.send({ path: '/v4/calls/none', query: {}, headers: {} }),
      ),
    );
    // 10 start at once; the 11th may start only when the first leaves the one-second window.
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    await limited.close();
  });

  it('keeps at most maxConcurrency requests in flight', async () => {
    sandbox.admin.setFaults({ latency: { medianMs: 30, p99Ms: 60 } });
    const capped = await sandboxClient(sandbox, { maxConcurrency: 2 });
    let peak = 0;
    const sampler = setInterval(() => {
      void capped.metrics.apiInFlight.get().then((g) => (peak = Math.max(peak, g.values[0]?.value ?? 0)));
    }, 2);
    await Promise.all(
      Array.from({ length: 12 }, () =>
        capped.transport.send({ path: '/v4/calls/none', query: {}, headers: {} }),
      ),
    );
    clearInterval(sampler);
    expect(peak).toBeGreaterThan(0);
    expect(peak).toBeLessThanOrEqual(2);
    await capped.close();
  });

  it('abandons a request when the caller aborts', async () => {
    sandbox.admin.setFaults({ latency: { medianMs: 5_000, p99Ms: 6_000 } });
    const controller = new AbortController();
    const pending = harness.transport.send(
      { path: '/v4/calls/none', query: {}, headers: {} },
      controller.signal,
    );
    controller.abort(new Error('caller stopped'));
    await expect(pending).rejects.toThrow('caller stopped');
  });
});
