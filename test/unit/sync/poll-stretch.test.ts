import { describe, expect, it } from 'vitest';
import {
  averageTurnMs,
  effectiveIntervalMs,
  isStretched,
  type LiveDemand,
} from '../../../src/sync/poll-stretch.js';

const demand = (over: Partial<LiveDemand> = {}): LiveDemand => ({
  configuredMs: 1_000,
  locations: 4,
  scopes: [{ locations: 4, ratePerSecond: 100 }],
  liveTurnMs: 10,
  workers: 4,
  liveShare: 1,
  ...over,
});

describe('effectiveIntervalMs', () => {
  it('is the configured interval while the live polls fit the budget and the workers', () => {
    expect(effectiveIntervalMs(demand())).toBe(1_000);
  });

  it("stretches to what a scope's rate allows the live polls, leaving history its share", () => {
    // 4 locations polled every 500 ms against 8 requests/s: live would take all of it.
    const tight = demand({ configuredMs: 500, scopes: [{ locations: 4, ratePerSecond: 8 }] });
    expect(effectiveIntervalMs(tight)).toBe(500);
    expect(effectiveIntervalMs({ ...tight, liveShare: 0.75 })).toBeCloseTo(4_000 / 6);
    // 24 locations every second at 10 requests/s.
    expect(
      effectiveIntervalMs(demand({ locations: 24, scopes: [{ locations: 24, ratePerSecond: 10 }] })),
    ).toBe(2_400);
  });

  it('takes the scope that needs the longest interval, and ignores scopes of unknown rate', () => {
    const scopes = [
      { locations: 10, ratePerSecond: 20 },
      { locations: 3, ratePerSecond: 1 },
      { locations: 50, ratePerSecond: null },
    ];
    expect(effectiveIntervalMs(demand({ scopes, locations: 63, liveTurnMs: null }))).toBe(3_000);
  });

  it('stretches to what the workers allow when live turns are long', () => {
    // 3 locations, 2 workers, a live turn of 0.6 s at a 1 s interval, history owed a quarter.
    expect(
      effectiveIntervalMs(demand({ locations: 3, scopes: [], liveTurnMs: 600, workers: 2, liveShare: 0.75 })),
    ).toBeCloseTo(1_200);
  });
});

describe('isStretched', () => {
  it('reports a stretch beyond the margin, and its end only once back at the configured interval', () => {
    expect(isStretched(1_050, 1_000, false)).toBe(false);
    expect(isStretched(1_200, 1_000, false)).toBe(true);
    expect(isStretched(1_050, 1_000, true)).toBe(true);
    expect(isStretched(1_000, 1_000, true)).toBe(false);
  });
});

describe('averageTurnMs', () => {
  it('starts at the first turn and moves a fifth of the way to each next one', () => {
    expect(averageTurnMs(null, 100)).toBe(100);
    expect(averageTurnMs(100, 200)).toBe(120);
  });
});
