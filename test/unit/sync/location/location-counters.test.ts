import { describe, expect, it } from 'vitest';
import { type ConnectorMetrics } from '../../../../src/metrics/metrics.js';
import { testMetrics } from '../../../support/metrics.js';
import { LocationCounters, type TraversalCounts } from '../../../../src/sync/location/location-counters.js';
import type { PageTally } from '../../../../src/sync/location/page-pipeline.js';
import { ManualClock } from '../../../support/clock.js';
import { counterValue, metricValue } from '../../../support/counters.js';

const LOC = '11111111-1111-1111-1111-111111111111';

/** A sample of calls_connector_change_commit_delay_seconds: `_bucket` (with `le`), `_sum` or `_count`. */
async function delaySample(
  metrics: ConnectorMetrics,
  suffix: '_bucket' | '_sum' | '_count',
  lane: string,
  le?: string,
): Promise<number | undefined> {
  const { values } = await metrics.changeCommitDelay.get();
  return values.find(
    (v) =>
      v.metricName === `calls_connector_change_commit_delay_seconds${suffix}` &&
      v.labels.lane === lane &&
      (le === undefined || String((v.labels as Record<string, unknown>).le) === le),
  )?.value;
}

const tally = (overrides: Partial<PageTally> = {}): PageTally => ({
  published: 0,
  updatedAt: [],
  deadLetters: [],
  deduplicated: 0,
  redacted: 0,
  belowWatermark: 0,
  unenriched: new Map(),
  supersededByLive: 0,
  ...overrides,
});

const traversal = (lane: TraversalCounts['lane'] = 'live'): TraversalCounts => ({
  lane,
  pages: 0,
  published: 0,
  deadLettered: 0,
  deduplicated: 0,
});

describe('LocationCounters', () => {
  it("counts a page in the metrics, the location's totals and its traversal's counts", async () => {
    const metrics = testMetrics();
    const counters = new LocationCounters(metrics, LOC);
    const current = traversal();
    counters.pageFetched(current);
    counters.recordPage(
      current,
      tally({
        published: 3,
        deadLetters: [{ locationUid: LOC, uid: null, code: 'ITEM_NO_UID', message: 'no uid', payload: '{}' }],
        deduplicated: 2,
        redacted: 1,
        belowWatermark: 1,
        unenriched: new Map([['refused', 1]]),
      }),
      null,
    );
    expect(current).toEqual({ lane: 'live', pages: 1, published: 3, deadLettered: 1, deduplicated: 2 });
    expect(counters.totals).toMatchObject({
      pages: 1,
      published: 3,
      deadLettered: 1,
      redacted: 1,
      belowWatermark: 1,
    });
    expect(await counterValue(metrics.pagesFetched, { location: LOC })).toBe(1);
    expect(await counterValue(metrics.recordsPublished, { location: LOC })).toBe(3);
    expect(await counterValue(metrics.recordsSkipped, { reason: 'boundary_dedupe' })).toBe(2);
    expect(await counterValue(metrics.recordsSkipped, { reason: 'dlq' })).toBe(1);
    expect(await counterValue(metrics.deadLetters, { code: 'ITEM_NO_UID' })).toBe(1);
    expect(await counterValue(metrics.recordsUnenriched, { reason: 'refused' })).toBe(1);
  });

  it('observes the high-water mark only when the committed watermark moved', () => {
    const metrics = testMetrics();
    const seen: number[] = [];
    metrics.observeHighWater = (_uid, at) => void seen.push(Number(at));
    const counters = new LocationCounters(metrics, LOC);
    for (const watermark of [null, '2024-05-01T10:00:00Z', '2024-05-01T10:00:00Z', '2024-05-01T11:00:00Z'])
      counters.recordPage(traversal(), tally(), watermark);
    expect(seen).toEqual([Date.parse('2024-05-01T10:00:00Z'), Date.parse('2024-05-01T11:00:00Z')]);
  });

  it('counts completed traversals and cursor restarts by reason', async () => {
    const metrics = testMetrics();
    const counters = new LocationCounters(metrics, LOC);
    counters.traversalCompleted(1_000, 3_000);
    counters.cursorRestarted(true);
    counters.cursorRestarted(false);
    expect(counters.totals.traversalsCompleted).toBe(1);
    expect(await counterValue(metrics.cursorRestarts, { reason: 'invalid_cursor' })).toBe(1);
    expect(await counterValue(metrics.cursorRestarts, { reason: 'rejected_4xx' })).toBe(1);
  });

  it("observes each published change's delay from its updatedAt to the page's commit, in its lane's series", async () => {
    const clock = new ManualClock(Date.parse('2026-03-01T12:00:10Z'));
    const metrics = testMetrics({ clock });
    const counters = new LocationCounters(metrics, LOC);
    counters.recordPage(
      traversal('live'),
      tally({ published: 2, updatedAt: ['2026-03-01T12:00:09.5Z', '2026-03-01T12:00:04Z'] }),
      '2026-03-01T12:00:09.5Z',
    );
    counters.recordPage(
      traversal('history'),
      tally({ published: 1, updatedAt: ['2026-03-01T10:00:10Z'] }),
      '2026-03-01T12:00:09.5Z',
    );
    const delay = (lane: string, le: string) => delaySample(metrics, '_bucket', lane, le);
    // 0.5 s and 6 s in the live lane; 2 h in the history lane (beyond the last bucket).
    expect(await delay('live', '0.5')).toBe(1);
    expect(await delay('live', '5')).toBe(1);
    expect(await delay('live', '10')).toBe(2);
    expect(await delaySample(metrics, '_sum', 'live')).toBe(6.5);
    expect(await delay('history', '3600')).toBe(0);
    expect(await delaySample(metrics, '_count', 'history')).toBe(1);
    expect(await delay('history', '+Inf')).toBe(1);
  });

  it('observes nothing for an idle page', async () => {
    const metrics = testMetrics({ clock: new ManualClock(0) });
    new LocationCounters(metrics, LOC).recordPage(traversal(), tally(), null);
    expect(await delaySample(metrics, '_count', 'live')).toBeUndefined();
  });

  it("restarts the location's lag from the start of each completed live poll", async () => {
    const clock = new ManualClock(Date.parse('2026-03-01T12:00:00Z'));
    const metrics = testMetrics({ clock });
    const counters = new LocationCounters(metrics, LOC);
    const lag = () => metricValue(metrics, 'calls_connector_location_lag_seconds', { location: LOC });
    expect(await lag()).toBeUndefined();
    const began = clock.now();
    clock.advance(1_500);
    counters.traversalCompleted(began, clock.now());
    expect(counters.totals.caughtUpAt).toBe(began);
    expect(await lag()).toBe(1.5);
    // Nothing completes for a minute: the lag grows on the clock, whatever was (not) published.
    clock.advance(60_000);
    expect(await lag()).toBe(61.5);
    const next = clock.now();
    clock.advance(500);
    counters.traversalCompleted(next, clock.now());
    expect(await lag()).toBe(0.5);
  });
});
