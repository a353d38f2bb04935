import { describe, expect, it } from 'vitest';
import {
  addToSum,
  busyShare,
  decayedValue,
  effectiveIntervalMs,
  EMPTY_SUM,
  isStretched,
  maxWorkerStretch,
  nextWorkerStretch,
  NO_STRETCH,
  pageBusyMs,
  requestBoundMs,
  stretchWindowMs,
  type LiveDemand,
  type WorkerDemand,
} from '../../../../src/sync/scheduler/stretch-rule.js';

const demand = (over: Partial<LiveDemand> = {}): LiveDemand => ({
  configuredMs: 1_000,
  workerFactor: 1,
  scopes: [{ locations: 4, ratePerSecond: 100, liveGrantedPerSecond: null }],
  liveShare: 1,
  currentMs: 1_000,
  ...over,
});

const workers = (over: Partial<WorkerDemand> = {}): WorkerDemand => ({
  nowMs: 100_000,
  busyShare: 0.5,
  liveShare: 0.75,
  locations: 12,
  workers: 4,
  windowMs: 2_000,
  ...over,
});

describe('stretchWindowMs', () => {
  it('is twice the configured interval, within 2 s and 60 s', () => {
    expect(stretchWindowMs(500)).toBe(2_000);
    expect(stretchWindowMs(10_000)).toBe(20_000);
    expect(stretchWindowMs(900_000)).toBe(60_000);
  });
});

describe('DecayingSum', () => {
  it('decays on the clock with the window as its time constant, whether or not anything is added', () => {
    const sum = addToSum(EMPTY_SUM, 1_000, 100, 2_000);
    expect(decayedValue(sum, 1_000, 2_000)).toBe(100);
    expect(decayedValue(sum, 3_000, 2_000)).toBeCloseTo(100 / Math.E);
    expect(decayedValue(addToSum(sum, 3_000, 10, 2_000), 3_000, 2_000)).toBeCloseTo(100 / Math.E + 10);
  });

  it('sums a steady rate to the rate times the window', () => {
    let sum = EMPTY_SUM;
    // 40 ms of work every 100 ms for a minute: 0.4 ms per ms.
    for (let t = 0; t <= 60_000; t += 100) sum = addToSum(sum, t, 40, 2_000);
    expect(decayedValue(sum, 60_000, 2_000) / 2_000).toBeCloseTo(0.4, 1);
  });
});

describe('pageBusyMs', () => {
  it("counts a page's time less its waits for the rate limiter", () => {
    expect(pageBusyMs({ startedAtMs: 0, endedAtMs: 5_000, limiterWaitMs: 4_800, progressed: true })).toBe(
      200,
    );
  });

  it('counts nothing of a page that made no progress (a restarted cursor: Karn)', () => {
    expect(pageBusyMs({ startedAtMs: 0, endedAtMs: 80_000, limiterWaitMs: 0, progressed: false })).toBe(0);
  });
});

describe('busyShare', () => {
  it('is the busy ms over the window times the workers, a running page counting at most one window', () => {
    // 4 workers, a 2 s window: 1.6 s of pages ended, one page running for 80 s (one worker), one for 0.4 s.
    expect(
      busyShare({ endedBusyMs: 1_600, runningBusyMs: [80_000, 400], windowMs: 2_000, workers: 4 }),
    ).toBeCloseTo((1_600 + 2_000 + 400) / 8_000);
    expect(busyShare({ endedBusyMs: 0, runningBusyMs: [], windowMs: 2_000, workers: 4 })).toBe(0);
  });
});

describe('nextWorkerStretch', () => {
  it('does not stretch while the workers are busy below live share (one location holding one worker of four)', () => {
    expect(nextWorkerStretch(NO_STRETCH, workers({ busyShare: 0.3 }))).toBe(NO_STRETCH);
  });

  it('goes up by busyShare / liveShare, at most doubling, once per window', () => {
    const up = nextWorkerStretch(NO_STRETCH, workers({ busyShare: 0.9 }));
    expect(up.factor).toBeCloseTo(1.2);
    expect(nextWorkerStretch(up, workers({ busyShare: 0.9, nowMs: 101_000 })).factor).toBeCloseTo(1.2);
    expect(nextWorkerStretch(up, workers({ busyShare: 0.9, nowMs: 102_000 })).factor).toBeCloseTo(1.44);
    // liveShare 0.25 and all busy: ratio 4, one step of 2.
    expect(nextWorkerStretch(NO_STRETCH, workers({ busyShare: 1, liveShare: 0.25 })).factor).toBe(2);
  });

  it('comes down by the same ratio, at most halving per half window, never below 1', () => {
    const stretched = { ...NO_STRETCH, factor: 3, raisedAtMs: 90_000 };
    const down = nextWorkerStretch(stretched, workers({ busyShare: 0.5 }));
    expect(down.factor).toBeCloseTo(2);
    expect(nextWorkerStretch(down, workers({ busyShare: 0, nowMs: 100_500 })).factor).toBeCloseTo(2);
    expect(nextWorkerStretch(down, workers({ busyShare: 0, nowMs: 101_000 })).factor).toBeCloseTo(1);
    expect(
      nextWorkerStretch({ ...down, factor: 1.2 }, workers({ busyShare: 0, nowMs: 101_000 })).factor,
    ).toBe(1);
  });

  it('is bounded by every location holding a worker for a whole interval', () => {
    // 3 locations on 4 workers can never need a stretch.
    expect(maxWorkerStretch(3, 4, 0.75)).toBe(1);
    expect(maxWorkerStretch(12, 4, 0.75)).toBe(4);
    // 12 locations on 4 workers at a quarter: 12 at most.
    const high = { ...NO_STRETCH, factor: 7 };
    expect(nextWorkerStretch(high, workers({ busyShare: 1, liveShare: 0.25 })).factor).toBe(12);
    expect(nextWorkerStretch({ ...NO_STRETCH, factor: 10 }, workers({ locations: 3 })).factor).toBe(1);
  });
});

describe('requestBoundMs', () => {
  it("is what live's share of a scope's rate allows one listing per location", () => {
    // 24 locations at 10 requests/s.
    expect(requestBoundMs({ locations: 24, ratePerSecond: 10, liveGrantedPerSecond: null }, 1, 1_000)).toBe(
      2_400,
    );
    // 4 locations at 8 requests/s, a quarter left to history.
    expect(
      requestBoundMs({ locations: 4, ratePerSecond: 8, liveGrantedPerSecond: null }, 0.75, 500),
    ).toBeCloseTo(4_000 / 6);
    expect(requestBoundMs({ locations: 4, ratePerSecond: null, liveGrantedPerSecond: 50 }, 1, 500)).toBe(0);
  });

  it("sets aside the live requests the limiter granted beyond the polls, up to half of live's rate", () => {
    // 4 locations polled every 2 s (2 listings/s) and 5 live requests/s granted: 3/s are single calls.
    expect(
      requestBoundMs({ locations: 4, ratePerSecond: 8, liveGrantedPerSecond: 5 }, 0.75, 2_000),
    ).toBeCloseTo(4_000 / (6 - 3));
    // A burst of 40/s counts as at most half of live's 6/s.
    expect(
      requestBoundMs({ locations: 4, ratePerSecond: 8, liveGrantedPerSecond: 40 }, 0.75, 2_000),
    ).toBeCloseTo(4_000 / 3);
  });
});

describe('effectiveIntervalMs', () => {
  it('is the configured interval while the live polls fit the budget and the workers', () => {
    expect(effectiveIntervalMs(demand())).toBe(1_000);
  });

  it('takes the largest of the worker stretch and every scope, ignoring scopes of unknown rate', () => {
    const scopes = [
      { locations: 10, ratePerSecond: 20, liveGrantedPerSecond: null },
      { locations: 3, ratePerSecond: 1, liveGrantedPerSecond: null },
      { locations: 50, ratePerSecond: null, liveGrantedPerSecond: null },
    ];
    expect(effectiveIntervalMs(demand({ scopes }))).toBe(3_000);
    expect(effectiveIntervalMs(demand({ scopes, workerFactor: 4 }))).toBe(4_000);
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
