/**
 * LocationSync through a large same-instant group (a bulk import at one instant): a history lane's read in
 * bounded pieces while the boundary can hold the group, and merged within a bounded number of single-call
 * requests when some of them fail (the page's answers survive its retry); a live lane's read through the
 * group when its single calls outlive the API's cursors.
 */
import { describe, expect, it } from 'vitest';
import { mapListedItem, mapSingleCall } from '../../../../src/api/call-mapper.js';
import { DEFAULT_RETRY_POLICY } from '../../../../src/api/retry-policy.js';
import { RetriableError } from '../../../../src/errors/index.js';
import { testMetrics } from '../../../support/metrics.js';
import { Enricher } from '../../../../src/sync/location/enricher.js';
import { DEFAULT_LANE_SETTINGS } from '../../../../src/sync/lanes/lanes.js';
import { LocationSync } from '../../../../src/sync/location/location-sync.js';
import type { SingleCall } from '../../../../src/sync/model.js';
import type { CallsApi, ListedPage, PageCommit, PageRequest } from '../../../../src/sync/ports.js';
import { ManualClock } from '../../../support/clock.js';
import { FakeCallsApi, type FakeCall } from '../../../support/sync/fake-calls-api.js';
import { InMemorySink } from '../../../support/sync/in-memory-sink.js';
import { metricValue } from '../../../support/sync/location-sync-fixture.js';
import { publishedVersions } from '../../../support/sync/published-versions.js';
import { unitLocationSync } from '../../../support/sync/unit-location-sync.js';

const LOC = '11111111-1111-1111-1111-111111111111';
const at = (minutes: number) => new Date(Date.parse('2026-11-24T10:00:00Z') + minutes * 60_000).toISOString();
const NOW = Date.parse(at(200));

interface Listed {
  uid: string;
  updatedAt: string;
}

/**
 * The calls API over a fixed, sorted set of calls: position cursors (since, order, position), no expiry;
 * every `failEvery`-th single-call request fails transiently (as after the client's retries).
 */
class GroupApi implements Pick<CallsApi, 'listPage' | 'getCall'> {
  gets = 0;
  private readonly versions: ReadonlyMap<string, string>;
  constructor(
    private readonly calls: readonly Listed[],
    private readonly failEvery: number,
  ) {
    this.versions = new Map(calls.map((c) => [c.uid, c.updatedAt]));
  }

  listPage(request: PageRequest): Promise<ListedPage> {
    const state =
      request.kind === 'next'
        ? (JSON.parse(Buffer.from(request.cursor, 'base64url').toString()) as {
            since: string | null;
            desc: boolean;
            position: number;
          })
        : { since: request.since, desc: request.order === 'desc', position: 0 };
    const since = state.since;
    let matching = since === null ? [...this.calls] : this.calls.filter((c) => c.updatedAt >= since);
    if (state.desc) matching = matching.reverse();
    const slice = matching.slice(state.position, state.position + request.limit);
    const end = state.position + slice.length;
    const next = { ...state, position: end };
    return Promise.resolve({
      items: slice.map((c) =>
        mapListedItem(
          {
            uid: c.uid,
            updatedAt: c.updatedAt,
            locationPhoneNumber: '+15550000',
            customerPhoneNumber: '+15551234',
            startedAt: null,
            endedAt: null,
            isPrivate: null,
            conversationUid: null,
          },
          LOC,
        ),
      ),
      nextCursor: end < matching.length ? Buffer.from(JSON.stringify(next)).toString('base64url') : null,
    });
  }

  getCall(uid: string): Promise<SingleCall | null> {
    this.gets += 1;
    if (this.gets % this.failEvery === 0)
      return Promise.reject(new RetriableError('API_UNAVAILABLE', 'the calls API failed 8 times: HTTP 503'));
    const updatedAt = this.versions.get(uid) ?? null;
    const call = { uid, updatedAt, isPrivate: false, conversationUid: `conv-${uid}` };
    return Promise.resolve(mapSingleCall({ ...call, startedAt: at(9), endedAt: at(10) }, uid));
  }
}

/** A sink that also remembers how many calls each commit published. */
class CountingSink extends InMemorySink {
  readonly pageSizes: number[] = [];
  override commitPage(commit: PageCommit) {
    this.pageSizes.push(commit.calls.length);
    return super.commitPage(commit);
  }
}

/** A history of `size` calls at one instant (minute 10), then the present (minutes 159, 160: T0 is 159). */
function bulkImport(size: number): Listed[] {
  const group = Array.from({ length: size }, (_, i) => ({
    uid: `g${String(i).padStart(6, '0')}`,
    updatedAt: at(10),
  }));
  return [...group, { uid: 'n1', updatedAt: at(159) }, { uid: 'n2', updatedAt: at(160) }];
}

function build(api: GroupApi, boundaryCap: number) {
  const sink = new CountingSink();
  const sync = unitLocationSync({
    locationUid: LOC,
    api,
    enricher: new Enricher({ api, enabled: true, concurrency: 8 }),
    sink,
    metrics: testMetrics(),
    settings: {
      pageSize: 100,
      boundaryCap,
      commitRetry: { ...DEFAULT_RETRY_POLICY, maxAttempts: 2 },
      lanes: DEFAULT_LANE_SETTINGS,
    },
    clock: { now: () => NOW, random: () => 0, sleep: async () => {} },
  });
  return { sync, sink };
}

/**
 * Runs the history lane, a failed page retried like the scheduler does (the next turn, from the stored offset),
 * until it merged or its single-call requests pass `maxGets`. Returns whether it merged.
 */
async function runHistory(sync: LocationSync, api: GroupApi, maxGets: number): Promise<boolean> {
  await sync.runPage(undefined, 'live');
  while (sync.hasHistory && api.gets <= maxGets) {
    try {
      await sync.runPage(undefined, 'history');
    } catch (error) {
      if (!(error instanceof RetriableError)) throw error;
    }
  }
  return !sync.hasHistory;
}

describe('LocationSync through a large same-instant group', () => {
  it('merges a 12,000-call group past the boundary cap within a bounded number of single-call requests, though one request in 5,000 fails', async () => {
    const size = 12_000;
    const api = new GroupApi(bulkImport(size), 5_000);
    const { sync, sink } = build(api, 100);

    // Every attempt of a page that asked all 12,000 calls again would meet two failures: it would never merge.
    expect(await runHistory(sync, api, 2 * size)).toBe(true);
    expect(api.gets).toBeLessThan(1.1 * size);
    const published = sink.calls.filter((c) => c.uid.startsWith('g')).map((c) => c.uid);
    expect(new Set(published).size).toBe(size);
    expect(published).toHaveLength(size);
    expect(sink.calls.every((c) => c.enriched)).toBe(true);
  });

  it('commits a group the boundary can hold in pieces of lanes.groupPieceSize calls, each once', async () => {
    const size = 12_000;
    const api = new GroupApi(bulkImport(size), 5_000);
    const { sync, sink } = build(api, 20_000);

    expect(await runHistory(sync, api, 2 * size)).toBe(true);
    const piece = DEFAULT_LANE_SETTINGS.groupPieceSize ?? 0;
    // A piece ends at the first listing (of up to 100 calls) that completes it.
    expect(Math.max(...sink.pageSizes)).toBeLessThanOrEqual(piece + 100);
    expect(sink.pageSizes.filter((n) => n > 0).length).toBeGreaterThanOrEqual(size / (piece + 100));
    const published = sink.calls.filter((c) => c.uid.startsWith('g')).map((c) => c.uid);
    expect(published).toHaveLength(size);
    expect(new Set(published).size).toBe(size);
    expect(api.gets).toBeLessThan(1.1 * size);
  });
});

/** A fake API whose single calls each take `getMs` of the clock, and whose cursors live `cursorMs`. */
class SlowSingleCalls extends FakeCallsApi {
  constructor(
    calls: FakeCall[],
    private readonly clock: ManualClock,
    private readonly getMs: number,
    cursorMs: number,
  ) {
    super(calls);
    this.cursorLifetime = { ms: cursorMs, now: () => clock.now() };
  }

  override async getCall(uid: string): Promise<SingleCall | null> {
    this.clock.advance(this.getMs);
    return super.getCall(uid);
  }
}

describe("LocationSync's live lane through a same-instant group", () => {
  const second = (s: number) => `2026-11-24T10:00:${String(s).padStart(2, '0')}Z`;
  const liveCall = (uid: string, s: number): FakeCall => ({ uid, locationUid: LOC, updatedAt: second(s) });
  const group = Array.from({ length: 12 }, (_, i) => liveCall(`g${String(i).padStart(2, '0')}`, 5));
  const data = [...group, liveCall('z', 6)];

  function buildLive(pieceCalls: number) {
    // Pages of 3 calls whose single calls take 20 ms each (60 ms a page); a cursor lives 50 ms.
    const clock = new ManualClock(Date.parse(second(30)));
    const api = new SlowSingleCalls(data, clock, 20, 50);
    const sink = new InMemorySink();
    const metrics = testMetrics();
    const sync = unitLocationSync({
      locationUid: LOC,
      api,
      enricher: new Enricher({ api, enabled: true, concurrency: 1, clock }),
      sink,
      metrics,
      clock,
      settings: {
        pageSize: 3,
        commitRetry: { ...DEFAULT_RETRY_POLICY, maxAttempts: 1 },
        lanes: { ...DEFAULT_LANE_SETTINGS, enabled: false, groupPieceSize: pieceCalls },
      },
    });
    return { api, sync, sink, metrics };
  }

  async function traverse(sync: LocationSync): Promise<void> {
    for (let page = 0; page < 40; page++) if ((await sync.runPage()).complete) return;
    throw new Error('the traversal did not complete in 40 pages');
  }

  it('restarts once for a group of four pages whose single calls outlive a cursor, reading the rest at once from the watermark', async () => {
    const { api, sync, sink, metrics } = buildLive(1_000);
    await traverse(sync);
    const published = publishedVersions(sink);
    for (const c of data) expect(published.get(c.uid)).toEqual([c.updatedAt]);
    const restarts = await metricValue(metrics, 'calls_connector_cursor_restarts_total', {
      reason: 'invalid_cursor',
    });
    // Listing each page on its own: every cursor waited for a page's single calls, 4 restarts, 19 listings.
    // Here the first page's cursor expires; from the watermark, its 3 duplicates and the 9 calls and z after
    // them are listed at once: 1 + 1 + 5 listings.
    expect({ expired: api.expiredCursors, restarts, listings: api.requests.length }).toEqual({
      expired: 1,
      restarts: 1,
      listings: 7,
    });
  });

  it('hands a page whose commit failed the listing it was given ahead again, with no new listing', async () => {
    const { api, sync, sink, metrics } = buildLive(1_000);
    // After the restart the group's rest is listed at once and held; the second page taken from it fails to commit.
    while (sink.commits < 2) await sync.runPage();
    sink.failNext(1);
    await expect(sync.runPage()).rejects.toBeInstanceOf(RetriableError);
    await traverse(sync);
    const published = publishedVersions(sink);
    for (const c of data) expect(published.get(c.uid)).toEqual([c.updatedAt]);
    const restarts = await metricValue(metrics, 'calls_connector_cursor_restarts_total', {
      reason: 'invalid_cursor',
    });
    expect({ restarts, listings: api.requests.length }).toEqual({ restarts: 1, listings: 7 });
  });

  it('lists a piece of lanes.groupPieceSize calls ahead per restart when the group is larger, and commits it page by page', async () => {
    const { api, sync, sink, metrics } = buildLive(4);
    await traverse(sync);
    const published = publishedVersions(sink);
    for (const c of data) expect(published.get(c.uid)).toEqual([c.updatedAt]);
    const restarts = await metricValue(metrics, 'calls_connector_cursor_restarts_total', {
      reason: 'invalid_cursor',
    });
    // [g00 g01 g02]; its cursor expires. From the watermark: a page of duplicates, then g03..g08 listed at
    // once (4 or more new calls: a piece) and committed as two pages; the cursor after them expires. From the
    // watermark again: three pages of duplicates, then g09..g11 and z, two pages. Nine commits: five publish,
    // and each page of duplicates commits the cursor it moved to (the store must forget the rejected one).
    expect({ expired: api.expiredCursors, restarts, commits: sink.commits }).toEqual({
      expired: 2,
      restarts: 2,
      commits: 9,
    });
  });
});
