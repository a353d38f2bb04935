/**
 * LocationSync with lanes, against the hazards of a history page that waits for its turn (the review of
 * issue 32, L3, L5, L6, L8): cursors that expire while it waits, single-call answers that grow old, a
 * tombstone the live lane commits meanwhile, and an API that accepts only its own form of `since`.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_POLICY } from '../../../../src/api/retry-policy.js';
import { RetriableError } from '../../../../src/errors/index.js';
import { testMetrics } from '../../../support/metrics.js';
import { Enricher } from '../../../../src/sync/location/enricher.js';
import { DEFAULT_LANE_SETTINGS, type LaneSettings } from '../../../../src/sync/lanes/lanes.js';
import type { LocationSync, LocationSyncSettings } from '../../../../src/sync/location/location-sync.js';
import { ManualClock } from '../../../support/clock.js';
import { FakeCallsApi, type FakeCall } from '../../../support/sync/fake-calls-api.js';
import { InMemorySink } from '../../../support/sync/in-memory-sink.js';
import { publishedVersions } from '../../../support/sync/published-versions.js';
import { unitLocationSync } from '../../../support/sync/unit-location-sync.js';

const LOC = '11111111-1111-1111-1111-111111111111';
/** 10:00 + `minutes` on one day. */
const at = (minutes: number) => new Date(Date.parse('2026-11-24T10:00:00Z') + minutes * 60_000).toISOString();
const call = (uid: string, minutes: number, extra: Partial<FakeCall> = {}): FakeCall => ({
  uid,
  locationUid: LOC,
  updatedAt: at(minutes),
  ...extra,
});
const NOW = Date.parse(at(200));

function build(
  api: FakeCallsApi,
  options: { lanes?: LaneSettings; enrich?: boolean; settings?: Partial<LocationSyncSettings> } = {},
) {
  const clock = new ManualClock(NOW);
  const sink = new InMemorySink();
  const sync = unitLocationSync({
    locationUid: LOC,
    api,
    enricher: new Enricher({ api, enabled: options.enrich ?? false, concurrency: 2, clock }),
    sink,
    metrics: testMetrics(),
    settings: {
      commitRetry: { ...DEFAULT_RETRY_POLICY, maxAttempts: 2 },
      lanes: options.lanes ?? DEFAULT_LANE_SETTINGS,
      ...options.settings,
    },
    clock,
  });
  return { sync, sink, clock };
}

/** Waits until the history page read ahead (if any) is listed and prepared. */
async function historyReady(sync: LocationSync): Promise<void> {
  const ahead = sync.historyAhead();
  if (ahead.state === 'pending') await ahead.settled;
}

/** Per uid, the updatedAt of each version published, in order. */
const versions = publishedVersions;

const history = (n: number) => Array.from({ length: n }, (_, i) => call(`h${i}`, i));

describe('LocationSync with lanes, while history pages wait', () => {
  it('does not publish a history version over the tombstone the live lane committed after the history page was listed (L6)', async () => {
    const api = new FakeCallsApi([...history(6), call('n1', 160)]);
    api.keysetCursors = true;
    const { sync, sink } = build(api, { enrich: true, settings: { tombstoneGone: true } });
    await sync.runPage(); // split, live: n1
    // History page 1 (h0, h1) commits; its commit reads page 2 (h2, h3) ahead, h2 answered public.
    await sync.runPage(undefined, 'history');
    await historyReady(sync);
    // h2 changes now, then is deleted; the live lane lists its new version, GET answers 404: a tombstone.
    api.upsert(call('h2', 170));
    api.gone.add('h2');
    expect(await sync.runPage()).toMatchObject({ lane: 'live', published: 0 });
    expect(sink.tombstones).toEqual(['h2']);
    // Page 2, read ahead, still holds h2's old version: publishing it would bring the deleted call back.
    for (let i = 0; i < 10 && sync.hasHistory; i++) await sync.runPage(undefined, 'history');
    expect(sync.hasHistory).toBe(false);
    expect(versions(sink).get('h2')).toBeUndefined();
    for (const uid of ['h0', 'h1', 'h3', 'h4', 'h5', 'n1']) expect(versions(sink).get(uid)).toHaveLength(1);
  });

  it("splits at an updatedAt the API wrote, so an API that refuses the connector's own date-time form still syncs the location (L8)", async () => {
    // The API writes seconds and +00:00, and accepts only that form as since.
    const written = (minutes: number) => at(minutes).replace('.000Z', '+00:00');
    const api = new FakeCallsApi([
      ...Array.from({ length: 6 }, (_, i) => call(`h${i}`, i, { updatedAt: written(i) })),
      call('n0', 150, { updatedAt: written(150) }),
      call('n1', 160, { updatedAt: written(160) }),
    ]);
    api.sinceForm = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/;
    const { sync, sink } = build(api);
    expect(await sync.runPage()).toMatchObject({ lane: 'live', complete: true });
    // T0: the first updatedAt at or before the newest less the overlap (a minute), as the API wrote it.
    expect(sync.offset.history?.until).toBe(written(150));
    for (let i = 0; i < 10 && sync.hasHistory; i++) await sync.runPage(undefined, 'history');
    expect(sync.hasHistory).toBe(false);
    await sync.runPage();
    expect([...versions(sink).keys()].sort()).toEqual(['h0', 'h1', 'h2', 'h3', 'h4', 'h5', 'n0', 'n1']);
    for (const v of versions(sink).values()) expect(v).toHaveLength(1);
  });

  it('merges the lanes when the history watermark holds a same-instant group of more than a history page and cursors expire while pages wait for their turn (L3)', async () => {
    // 50 calls at one instant, history pages of 20, cursors that live 10 s, turns 15 s apart.
    const group = Array.from({ length: 50 }, (_, i) => call(`g${String(i).padStart(2, '0')}`, 5));
    const api = new FakeCallsApi([...history(3), ...group, call('n0', 159), call('n1', 160)]);
    const { sync, sink, clock } = build(api, {
      lanes: { ...DEFAULT_LANE_SETTINGS, historyPageSize: 20 },
      settings: { pageSize: 100 },
    });
    api.cursorLifetime = { ms: 10_000, now: () => clock.now() };
    await sync.runPage(); // split, live: n0, n1
    const failures: string[] = [];
    for (let turn = 0; turn < 40 && sync.hasHistory; turn++) {
      // Between turns the scheduler reads the next page ahead; the turn comes 15 s later.
      sync.prefetchHistory();
      await historyReady(sync);
      clock.advance(15_000);
      try {
        await sync.runPage(undefined, 'history');
      } catch (error) {
        if (!(error instanceof RetriableError)) throw error;
        failures.push(error.code); // the scheduler tries again later
      }
    }
    expect(sync.hasHistory).toBe(false);
    expect(failures).toEqual([]);
    expect(api.expiredCursors).toBeGreaterThan(0); // the waits did outlive cursors
    const published = versions(sink);
    for (const c of [...history(3), ...group]) expect(published.get(c.uid)).toEqual([c.updatedAt]);
  });

  it("asks a waiting history page's single calls again, in the background, before it commits, so a call made private meanwhile is not published with its number (L5)", async () => {
    const api = new FakeCallsApi([...history(4), call('n0', 159), call('n1', 160)]);
    api.keysetCursors = true;
    const { sync, sink, clock } = build(api, { enrich: true, settings: { maxEnrichmentAgeMs: 60_000 } });
    await sync.runPage(); // split, live: n0, n1
    // History page 1 (h0, h1) is read ahead: GET says both are public.
    sync.prefetchHistory();
    await historyReady(sync);
    expect(api.gets.filter((uid) => uid === 'h1')).toHaveLength(1);
    // It waits an hour for its turn; meanwhile h1 is made private (a new updatedAt, after T0), before the
    // live lane polls it.
    clock.advance(3_600_000);
    api.upsert(call('h1', 170, { isPrivate: true }));
    // Its turn finds it too old: handed back, to be asked again in the background.
    expect(await sync.runPage(undefined, 'history')).toMatchObject({ lane: 'history', published: 0 });
    await historyReady(sync);
    expect(await sync.runPage(undefined, 'history')).toMatchObject({ lane: 'history', published: 2 });
    // Asked again before the commit (another version now): no number from the hour-old answer.
    const h1 = sink.calls.filter((c) => c.uid === 'h1');
    expect(h1.map((c) => [c.updatedAt, c.customerPhoneNumber, c.enriched])).toEqual([[at(1), null, false]]);
    expect(api.gets.filter((uid) => uid === 'h1')).toHaveLength(2);
    expect(sink.calls.find((c) => c.uid === 'h0')?.customerPhoneNumber).toBe('+1555h0');
  });
});
