import { describe, expect, it } from 'vitest';
import {
  delaysWithMissing,
  pollingIntervalMs,
  reconciliationPolls,
  warmedUp,
  warmUpBoundMs,
  warmUpState,
  windowFigures,
} from '../../../bench/webhooks-figures.js';

describe('the webhooks bench figures', () => {
  it('gives the polling arm the shortest whole-second interval at which idle listings and single calls fit the budget', () => {
    expect(pollingIntervalMs(1_000, 20, 1)).toBe(53_000); // 1000 / 19 = 52.6 s
    expect(pollingIntervalMs(10_000, 20, 1)).toBe(527_000);
    expect(pollingIntervalMs(95, 20, 1)).toBe(5_000);
  });

  it('refuses a budget that the changes alone use up', () => {
    expect(() => pollingIntervalMs(100, 1, 1)).toThrow(RangeError);
  });

  it('bounds the warm-up by two rounds of listings at the budget and two minutes', () => {
    expect(warmUpBoundMs(1_000, 20)).toBe(220_000);
    expect(warmUpBoundMs(10_000, 20)).toBe(1_120_000);
  });

  it('counts the locations not traversed yet, and the traversed ones waiting more than a second past their due time', () => {
    const at = (state: string, nextRunAt: number | null, traversals: number) => ({
      state,
      nextRunAt,
      totals: { traversalsCompleted: traversals },
    });
    const state = warmUpState(
      [
        at('waiting', 0, 0), // not traversed (due since the start)
        at('running', null, 0), // its first traversal running
        at('waiting', 8_000, 1), // overdue by 2 s
        at('waiting', 9_500, 1), // due half a second ago: not a backlog
        at('waiting', 20_000, 1), // due later
        at('backoff', 1_000, 1), // in backoff: its health rule's time, not a backlog
        at('running', null, 3),
      ],
      10_000,
    );
    expect(state).toEqual({ notTraversed: 2, overdue: 1 });
  });

  it('starts measuring a webhook arm once every location is traversed and the backlog is under a second of the budget', () => {
    expect(warmedUp({ notTraversed: 1, overdue: 0 }, true, 20)).toBe(false);
    expect(warmedUp({ notTraversed: 0, overdue: 21 }, true, 20)).toBe(false);
    expect(warmedUp({ notTraversed: 0, overdue: 20 }, true, 20)).toBe(true);
  });

  it('does not wait for the backlog of a polling arm, which uses the whole budget by design', () => {
    expect(warmedUp({ notTraversed: 0, overdue: 500 }, false, 20)).toBe(true);
    expect(warmedUp({ notTraversed: 3, overdue: 0 }, false, 20)).toBe(false);
  });

  it('counts the reconciliation polls whose phase instant falls in the window, the end excluded', () => {
    // Interval 10 s; phases 0.1 (instants 1, 11, 21 s...) and 0.55 (5.5, 15.5 s...).
    expect(reconciliationPolls([0.1, 0.55], 10_000, 0, 10_000)).toBe(2);
    expect(reconciliationPolls([0.1, 0.55], 10_000, 1_000, 11_000)).toBe(2); // 1 s in, 11 s out
    expect(reconciliationPolls([0.1, 0.55], 10_000, 1_001, 5_500)).toBe(0);
    expect(reconciliationPolls([0.1, 0.55], 10_000, 0, 30_000)).toBe(6);
    expect(reconciliationPolls([0.1], 10_000, 2_000, 3_000)).toBe(0);
  });

  it('counts about locations × window / interval polls for evenly spread phases', () => {
    const phases = Array.from({ length: 1_000 }, (_, i) => i / 1_000);
    expect(reconciliationPolls(phases, 900_000, 1_234_567, 1_234_567 + 90_000)).toBe(100);
  });

  it('counts a change never received with the delay it had at the end, so a missed change cannot lower the tail', () => {
    const delays = delaysWithMissing(
      [
        { updatedAtMs: 1_000, receivedAtMs: 1_500 },
        { updatedAtMs: 2_000, receivedAtMs: undefined },
        { updatedAtMs: 3_000, receivedAtMs: 3_200 },
      ],
      10_000,
    );
    expect(delays).toEqual([0.2, 0.5, 8]);
  });

  it("takes the reconciliation polls out of the listings before dividing the changes' requests by the changes received", () => {
    const f = windowFigures({
      changes: [
        { updatedAtMs: 0, receivedAtMs: 300 },
        { updatedAtMs: 1_000, receivedAtMs: 1_200 },
        { updatedAtMs: 2_000, receivedAtMs: undefined },
        { updatedAtMs: 3_000, receivedAtMs: 3_100 },
      ],
      observedToMs: 12_000,
      requests: { listings: 50, singleCalls: 3, refused: 0 },
      seconds: 10,
      reconcilePolls: 47,
    });
    expect(f.received).toBe(3);
    expect(f.missing).toBe(1);
    expect(f.perChange).toBe(2); // (50 - 47 + 3) / 3
    expect(f.listingsPerChange).toBe(1);
    expect(f.singleCallsPerChange).toBe(1);
    expect(f.perChangeAll).toBeCloseTo(53 / 3, 10);
    expect(f.reconcilePerS).toBe(4.7);
    expect(f.requestsPerS).toBe(5.3);
    expect(f.p99S).toBe(10); // the change never received, at the end
    expect(f.p50S).toBe(0.3);
  });

  it('gives no per-change figure when no change of the window was received', () => {
    const f = windowFigures({
      changes: [],
      observedToMs: 0,
      requests: { listings: 5, singleCalls: 0, refused: 0 },
      seconds: 10,
      reconcilePolls: 10,
    });
    expect(f.perChange).toBeNaN();
    expect(f.p99S).toBeNaN();
  });
});
