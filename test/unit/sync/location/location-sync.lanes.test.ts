/**
 * LocationSync with lanes (lanes.ts): the split at T0, the live and history lanes' requests and priorities,
 * the merge, and the versions a history page must not publish.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_POLICY } from '../../../../src/api/retry-policy.js';
import { FatalError, RetriableError } from '../../../../src/errors/index.js';
import { testMetrics } from '../../../support/metrics.js';
import { Enricher } from '../../../../src/sync/location/enricher.js';
import { DEFAULT_LANE_SETTINGS, type LaneSettings } from '../../../../src/sync/lanes/lanes.js';
import { LocationSync } from '../../../../src/sync/location/location-sync.js';
import { EMPTY_OFFSET, type LocationOffset } from '../../../../src/sync/model.js';
import type { ListedPage, PageRequest, RequestHint } from '../../../../src/sync/ports.js';
import { compareDateTimes } from '../../../../src/time/instant.js';
import { counterValue } from '../../../support/counters.js';
import { FakeCallsApi, type FakeCall } from '../../../support/sync/fake-calls-api.js';
import { InMemorySink } from '../../../support/sync/in-memory-sink.js';
import { publishedVersions } from '../../../support/sync/published-versions.js';
import { unitLocationSync } from '../../../support/sync/unit-location-sync.js';

const LOC = '11111111-1111-1111-1111-111111111111';
/** 10:00 + `minutes` on one day. */
const at = (minutes: number) => new Date(Date.parse('2026-11-24T10:00:00Z') + minutes * 60_000).toISOString();
const call = (uid: string, minutes: number): FakeCall => ({ uid, locationUid: LOC, updatedAt: at(minutes) });
const NOW = Date.parse(at(200));

/** The API, recording each listing request with its priority. */
class RecordingApi extends FakeCallsApi {
  readonly listings: { request: PageRequest; priority: string | undefined }[] = [];

  override async listPage(
    request: PageRequest,
    signal?: AbortSignal,
    hint?: RequestHint,
  ): Promise<ListedPage> {
    this.listings.push({ request, priority: hint?.priority });
    return super.listPage(request, signal);
  }
}

function build(
  api: FakeCallsApi,
  options: { start?: LocationOffset; sink?: InMemorySink; lanes?: LaneSettings; enrich?: boolean } = {},
) {
  const sink = options.sink ?? new InMemorySink();
  const metrics = testMetrics();
  const sync = unitLocationSync({
    locationUid: LOC,
    startOffset: options.start ?? EMPTY_OFFSET,
    api,
    enricher: new Enricher({ api, enabled: options.enrich ?? false, concurrency: 2 }),
    sink,
    metrics,
    settings: {
      commitRetry: { ...DEFAULT_RETRY_POLICY, maxAttempts: 2 },
      lanes: options.lanes ?? DEFAULT_LANE_SETTINGS,
    },
    clock: { now: () => NOW, random: () => 0, sleep: async () => {} },
  });
  return { sync, sink, metrics };
}

/** Runs `lane`'s pages until its traversal completes (or the history lane merged). */
async function runLane(sync: LocationSync, lane: 'live' | 'history'): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const report = await sync.runPage(undefined, lane);
    if (report.complete) return;
  }
  throw new Error('lane did not complete');
}

/** Per uid, the updatedAt of each version published, in order. */
const versions = publishedVersions;

const history = (n: number) => Array.from({ length: n }, (_, i) => call(`h${i}`, i));

describe('LocationSync with lanes', () => {
  it('splits a location with nothing stored at T0: live from T0 at live priority, history up to T0 at backfill priority', async () => {
    // n1 is the first call at or before the newest (n2) less the overlap: T0 is its updatedAt as listed.
    const api = new RecordingApi([...history(5), call('n1', 159), call('n2', 160)]);
    api.keysetCursors = true;
    const { sync, sink, metrics } = build(api);

    const first = await sync.runPage();
    const T0 = at(159);
    expect(api.listings.slice(0, 2)).toEqual([
      {
        request: { kind: 'first', locationUid: LOC, since: null, order: 'desc', limit: 10 },
        priority: 'live',
      },
      { request: { kind: 'first', locationUid: LOC, since: T0, order: 'asc', limit: 2 }, priority: 'live' },
    ]);
    expect(first).toEqual({ complete: true, published: 2, lane: 'live' });
    expect(sink.calls.map((c) => c.uid)).toEqual(['n1', 'n2']);
    expect(sink.offsets.get(LOC)?.history).toEqual({
      since: null,
      cursor: null,
      watermark: null,
      boundary: [],
      until: T0,
    });
    expect(sync.hasHistory).toBe(true);
    // The live lane is polled, but the location is not caught up while history is left.
    expect(sync.totals.traversalsCompleted).toBe(0);
    expect(sync.backfill).toMatchObject({ untilMs: Date.parse(T0), positionMs: null, records: 0 });

    await runLane(sync, 'history');
    expect(api.listings.slice(2).every((l) => l.priority === 'backfill')).toBe(true);
    expect(api.listings[2]?.request).toMatchObject({ kind: 'first', since: null, order: 'asc' });
    expect(sink.calls.map((c) => c.uid)).toEqual(['n1', 'n2', 'h0', 'h1', 'h2', 'h3', 'h4']);
    expect(sync.hasHistory).toBe(false);
    expect(sync.backfill).toBeNull();
    expect(await counterValue(metrics.backfillRecords)).toBe(5);
    // Merged: the stored offset is the live lane's alone, in the format before lanes.
    expect(sink.offsets.get(LOC)).toEqual({
      since: at(160),
      cursor: null,
      watermark: at(160),
      boundary: ['n2'],
      boundaryFingerprints: expect.any(Object) as unknown,
    });
    await runLane(sync, 'live');
    expect(sync.totals.traversalsCompleted).toBe(1);
  });

  it('splits at the newest call the API lists when its newest calls are omitted and the first order=desc pages come back empty', async () => {
    // Spec 4.3 rule 6: calls that cannot be represented are left out of their page, the cursor still set.
    // The 15 newest are such calls: the first desc page of 10 is empty, the second holds n0 (the newest listed).
    const omitted = Array.from({ length: 15 }, (_, i) => call(`x${i}`, 170 + i));
    const api = new RecordingApi([...history(5), call('n0', 160), ...omitted]);
    for (const c of omitted) api.omitted.add(c.uid);
    const { sync, sink } = build(api);

    await sync.runPage();
    // T0: the first listed at or before n0 less the overlap (h4), as the API wrote it.
    expect(api.listings.slice(0, 2).map((l) => l.request.kind)).toEqual(['first', 'next']);
    expect(sink.offsets.get(LOC)?.history?.until).toBe(at(4));
    expect(sync.hasHistory).toBe(true);
    await runLane(sync, 'history');
    await runLane(sync, 'live');
    expect(sink.calls.map((c) => c.uid).sort()).toEqual(['h0', 'h1', 'h2', 'h3', 'h4', 'n0']);
  });

  it('leaves the items at or after T0 to the live lane: the history page that reaches T0 ends the lane', async () => {
    // h0..h3 are before T0 (n0's updatedAt); n0 and n1 sit in the overlap (at or after T0) and are
    // listed by both lanes' ranges, published once only.
    const api = new RecordingApi([...history(4), call('n0', 159), call('n1', 159.5), call('n2', 160)]);
    api.keysetCursors = true;
    const { sync, sink, metrics } = build(api);
    await sync.runPage();
    await runLane(sync, 'history');
    expect([...versions(sink)].map(([uid, v]) => [uid, v.length])).toEqual([
      ['n0', 1],
      ['n1', 1],
      ['h0', 1],
      ['h1', 1],
      ['h2', 1],
      ['h3', 1],
    ]);
    // The history lane's last page (n0) stopped at n0 although the listing had more.
    expect(api.listings.filter((l) => l.priority === 'backfill')).toHaveLength(3);
    expect(await counterValue(metrics.recordsPublished)).toBe(6);
  });

  it('does not publish a history version the live lane published newer after the history page was listed', async () => {
    const api = new RecordingApi([...history(6), call('n1', 160)]);
    api.keysetCursors = true;
    const sink = new InMemorySink();
    const { sync, metrics } = build(api, { sink });
    await sync.runPage(); // split, live: n1
    // History page 1 (h0, h1) commits; its commit reads page 2 (h2, h3) ahead.
    await sync.runPage(undefined, 'history');
    // h2 changes now, after page 2 was listed; the live lane publishes its new version first.
    api.upsert(call('h2', 170));
    expect(await sync.runPage()).toMatchObject({ lane: 'live', published: 1 });
    // Page 2, read ahead, still holds h2's old version: it must not follow the newer one.
    await runLane(sync, 'history');
    const h2 = versions(sink).get('h2');
    expect(h2).toEqual([at(170)]);
    expect(await counterValue(metrics.recordsSkipped, { reason: 'superseded_by_live' })).toBe(1);
    for (const uid of ['h0', 'h1', 'h3', 'h4', 'h5', 'n1']) expect(versions(sink).get(uid)).toHaveLength(1);
  });

  it('publishes a history call whose single call already shows a newer version unenriched at its listed version, before the live lane publishes the newer one', async () => {
    const api = new RecordingApi([...history(2), call('n0', 159), call('n1', 160)]);
    api.keysetCursors = true;
    const sink = new InMemorySink();
    const { sync } = build(api, { sink, enrich: true });
    await sync.runPage();
    api.getUpdatedAt.set('h1', at(170)); // changed between the listing and its GET
    await runLane(sync, 'history');
    api.getUpdatedAt.delete('h1');
    api.upsert(call('h1', 170));
    await runLane(sync, 'live');
    const published = sink.calls.filter((c) => c.uid === 'h1');
    expect(published.map((c) => [c.updatedAt, c.enriched, c.customerPhoneNumberRedacted])).toEqual([
      [at(1), false, true],
      [at(170), true, false],
    ]);
  });

  it('splits a stored offset behind by more than the threshold: history resumes it (cursor and all), live starts at T0', async () => {
    const api = new RecordingApi([...history(6), call('n1', 160)]);
    api.keysetCursors = true;
    const sink = new InMemorySink();
    // A traversal stopped after h0, h1 (its cursor stored), long ago.
    const { sync: old } = build(api, { sink, lanes: { ...DEFAULT_LANE_SETTINGS, enabled: false } });
    await old.runPage();
    const stored = sink.offsets.get(LOC)!;
    expect(stored.cursor).not.toBeNull();

    const { sync } = build(api, { sink, start: stored });
    await sync.runPage();
    expect(sink.offsets.get(LOC)?.history).toMatchObject({ cursor: stored.cursor, watermark: at(1) });
    await runLane(sync, 'history');
    expect([...versions(sink).values()].every((v) => v.length === 1)).toBe(true);
    // T0 is h5's updatedAt (the first at or before n1 less the overlap): h5 is the live lane's.
    expect(sink.calls.map((c) => c.uid)).toEqual(['h0', 'h1', 'h5', 'n1', 'h2', 'h3', 'h4']);
  });

  it('neither checks nor splits a location caught up recently, nor one behind by the threshold or less', async () => {
    const recent: LocationOffset = { since: at(195), cursor: null, watermark: at(195), boundary: [] };
    const api = new RecordingApi([call('n1', 199)]);
    const { sync } = build(api, { start: recent });
    await sync.runPage();
    expect(api.listings.map((l) => l.request.kind === 'first' && l.request.order)).toEqual(['asc']);

    const behind: LocationOffset = { since: at(120), cursor: null, watermark: at(120), boundary: [] };
    const api2 = new RecordingApi([call('n1', 170)]);
    const { sync: sync2 } = build(api2, { start: behind });
    await sync2.runPage();
    expect(api2.listings.map((l) => l.request.kind === 'first' && l.request.order)).toEqual(['desc', 'asc']);
    expect(sync2.hasHistory).toBe(false);
  });

  it('does not split a location without calls, nor any location with lanes off', async () => {
    const empty = new RecordingApi([]);
    const { sync } = build(empty);
    expect(await sync.runPage()).toEqual({ complete: true, published: 0, lane: 'live' });
    expect(sync.hasHistory).toBe(false);

    const api = new RecordingApi(history(3));
    const { sync: off, sink } = build(api, { lanes: { ...DEFAULT_LANE_SETTINGS, enabled: false } });
    await runLane(off, 'live');
    expect(api.listings.every((l) => l.request.kind !== 'first' || l.request.order === 'asc')).toBe(true);
    expect(sink.calls).toHaveLength(3);
  });

  it('reads history first, unsplit, when the API refuses the order=desc check, and checks again after a transient failure', async () => {
    const api = new RecordingApi([...history(3), call('n1', 160)]);
    api.listErrors.push(new RetriableError('API_UNAVAILABLE', 'down'));
    const { sync, sink } = build(api);
    await expect(sync.runPage()).rejects.toThrow('down');
    api.listErrors.push(new FatalError('API_BAD_REQUEST', 'order=desc is not supported'));
    await runLane(sync, 'live');
    expect(sync.hasHistory).toBe(false);
    expect(sink.calls.map((c) => c.uid)).toEqual(['h0', 'h1', 'h2', 'n1']);
    expect(api.listings.filter((l) => l.request.kind === 'first' && l.request.order === 'desc')).toHaveLength(
      2,
    );
  });

  it('resumes both lanes from the stored offset after a crash, losing and doubling nothing', async () => {
    const api = new RecordingApi([...history(7), call('n1', 160)]);
    api.keysetCursors = true;
    const sink = new InMemorySink();
    const { sync } = build(api, { sink });
    await sync.runPage();
    await sync.runPage(undefined, 'history');
    api.upsert(call('n2', 180));
    api.upsert(call('h5', 181));
    const { sync: next } = build(api, { sink, start: sink.offsets.get(LOC)! });
    await runLane(next, 'live');
    await runLane(next, 'history');
    const truth = new Map(
      [...history(7), call('n1', 160), call('n2', 180), call('h5', 181)].map((c) => [c.uid, c.updatedAt]),
    );
    const last = new Map(sink.calls.map((c) => [c.uid, c.updatedAt]));
    expect(last).toEqual(truth);
    const keys = sink.calls.map((c) => `${c.uid}@${c.updatedAt}`);
    expect(new Set(keys).size).toBe(keys.length);
    for (const v of versions(sink).values()) expect([...v].sort(compareDateTimes)).toEqual(v); // never backwards
  });
});
