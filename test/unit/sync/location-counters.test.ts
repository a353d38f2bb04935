import { describe, expect, it } from 'vitest';
import { ConnectorMetrics } from '../../../src/metrics/metrics.js';
import { LocationCounters, type TraversalCounts } from '../../../src/sync/location-counters.js';
import type { PageTally } from '../../../src/sync/page-pipeline.js';
import { counterValue } from '../../support/counters.js';

const LOC = '11111111-1111-1111-1111-111111111111';

const tally = (overrides: Partial<PageTally> = {}): PageTally => ({
  published: 0,
  deadLetters: [],
  deduplicated: 0,
  redacted: 0,
  belowWatermark: 0,
  unenriched: new Map(),
  supersededByLive: 0,
  ...overrides,
});

const traversal = (): TraversalCounts => ({ pages: 0, published: 0, deadLettered: 0, deduplicated: 0 });

describe('LocationCounters', () => {
  it("counts a page in the metrics, the location's totals and its traversal's counts", async () => {
    const metrics = new ConnectorMetrics();
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
    expect(current).toEqual({ pages: 1, published: 3, deadLettered: 1, deduplicated: 2 });
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
    const metrics = new ConnectorMetrics();
    const seen: number[] = [];
    metrics.observeHighWater = (_uid, at) => void seen.push(Number(at));
    const counters = new LocationCounters(metrics, LOC);
    for (const watermark of [null, '2024-05-01T10:00:00Z', '2024-05-01T10:00:00Z', '2024-05-01T11:00:00Z'])
      counters.recordPage(traversal(), tally(), watermark);
    expect(seen).toEqual([Date.parse('2024-05-01T10:00:00Z'), Date.parse('2024-05-01T11:00:00Z')]);
  });

  it('counts completed traversals and cursor restarts by reason', async () => {
    const metrics = new ConnectorMetrics();
    const counters = new LocationCounters(metrics, LOC);
    counters.traversalCompleted(1_000, 3_000);
    counters.cursorRestarted(true);
    counters.cursorRestarted(false);
    expect(counters.totals.traversalsCompleted).toBe(1);
    expect(await counterValue(metrics.cursorRestarts, { reason: 'invalid_cursor' })).toBe(1);
    expect(await counterValue(metrics.cursorRestarts, { reason: 'rejected_4xx' })).toBe(1);
  });
});
