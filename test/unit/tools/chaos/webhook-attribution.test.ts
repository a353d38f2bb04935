import { describe, expect, it } from 'vitest';
import {
  attribute,
  attributeAll,
  NUDGE_BOUND_MS,
  outsideFaults,
  RECONCILE_INTERVAL_MS,
  type AnnouncedChange,
} from '../../../../tools/chaos/webhook-attribution.js';

const change = (over: Partial<AnnouncedChange>): AnnouncedChange => ({
  uid: 'call-1',
  locationUid: 'loc-1',
  madeAtMs: 1000,
  takenAtMs: 1050,
  publishedAtMs: 1800,
  ...over,
});

describe('the webhook attribution rule', () => {
  it('leaves a reconciliation poll at least twice the nudge bound after a traversal', () => {
    expect(RECONCILE_INTERVAL_MS / 2).toBeGreaterThanOrEqual(2 * NUDGE_BOUND_MS);
  });

  it('calls a change in Kafka within the bound of its own delivery being taken a nudge', () => {
    expect(attribute(change({}), [1050])).toBe('nudge');
    expect(attribute(change({ publishedAtMs: 1050 + NUDGE_BOUND_MS }), [1050])).toBe('nudge');
  });

  it('calls a change in Kafka past the bound, with no other delivery of its location, reconciliation', () => {
    expect(attribute(change({ publishedAtMs: 1051 + NUDGE_BOUND_MS }), [1050])).toBe('reconciliation');
    expect(attribute(change({ takenAtMs: null, publishedAtMs: 15_000 }), [])).toBe('reconciliation');
  });

  it("credits another change's nudge of the same location, taken after the change was made", () => {
    expect(attribute(change({ takenAtMs: null, publishedAtMs: 9000 }), [8500])).toBe('other-nudge');
    // A delivery taken before the change was made cannot have brought it.
    expect(attribute(change({ takenAtMs: null, publishedAtMs: 4000 }), [900])).toBe('reconciliation');
  });

  it('tells a change polled before its delivery was taken, and one never published', () => {
    expect(attribute(change({ takenAtMs: 3000, publishedAtMs: 2000 }), [3000])).toBe('before-delivery');
    expect(attribute(change({ publishedAtMs: null }), [1050])).toBe('unpublished');
  });

  it('holds a change outside the faults only when neither made during one nor within the bound before one', () => {
    const spans = [{ fromMs: 10_000, untilMs: 20_000 }];
    expect(outsideFaults(4000, spans)).toBe(true);
    expect(outsideFaults(10_000 - NUDGE_BOUND_MS, spans)).toBe(false);
    expect(outsideFaults(15_000, spans)).toBe(false);
    expect(outsideFaults(20_001, spans)).toBe(true);
  });

  it('counts routes and the delivered freshness outside the fault spans only for announced changes', () => {
    const attribution = attributeAll(
      [
        change({ madeAtMs: 1000, takenAtMs: 1010, publishedAtMs: 1500 }),
        change({ uid: 'c2', madeAtMs: 2000, takenAtMs: 2010, publishedAtMs: 3000 }),
        change({ uid: 'c3', madeAtMs: 3000, takenAtMs: null, publishedAtMs: 30_000 }),
        change({ uid: 'c4', madeAtMs: 50_000, takenAtMs: 50_010, publishedAtMs: 70_000 }),
      ],
      [{ fromMs: 45_000, untilMs: 60_000 }],
    );
    expect(attribution.all.announced).toMatchObject({ nudge: 2, reconciliation: 1 });
    expect(attribution.outside.announced).toMatchObject({ nudge: 2, reconciliation: 0 });
    expect(attribution.outside.unannounced.reconciliation).toBe(1);
    expect(attribution.deliveredOutside).toEqual({ count: 2, p50Ms: 500, p99Ms: 1000, maxMs: 1000 });
  });
});
