import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_POLICY } from '../../../src/api/retry-policy.js';
import { FatalError, RetriableError } from '../../../src/errors/index.js';
import { silentLogger } from '../../../src/logging/logger.js';
import { ConnectorMetrics } from '../../../src/metrics/metrics.js';
import { systemClock, type Clock } from '../../../src/time/clock.js';
import { DEFAULT_STOPPED_RETRY } from '../../../src/sync/healing.js';
import { Enricher } from '../../../src/sync/enricher.js';
import { pollPhase } from '../../../src/sync/poll-phase.js';
import { Scheduler, type SchedulerSettings } from '../../../src/sync/scheduler.js';
import { minimumRoundMs } from '../../../src/sync/minimum-round.js';
import { ManualClock } from '../../support/clock.js';
import { eventually } from '../../support/kafka.js';
import { FakeCallsApi, type FakeCall } from '../../support/sync/fake-calls-api.js';
import { InMemorySink } from '../../support/sync/in-memory-sink.js';
import { unitLocationSync } from '../../support/sync/unit-location-sync.js';
import { testFingerprints } from '../../support/sync/fingerprints.js';
import { LocationSync } from '../../../src/sync/location-sync.js';
import { EMPTY_OFFSET } from '../../../src/sync/model.js';
import type { PageRequest, RequestHint } from '../../../src/sync/ports.js';

const loc = (n: number) => `00000000-0000-0000-0000-${String(n).padStart(12, '0')}`;
const t = (second: number) =>
  `2024-03-01T12:${String(Math.floor(second / 60)).padStart(2, '0')}:${String(second % 60).padStart(2, '0')}Z`;

function calls(location: string, count: number): FakeCall[] {
  return Array.from({ length: count }, (_, i) => ({
    uid: `${location.slice(-2)}-${i}`,
    locationUid: location,
    updatedAt: t(i),
  }));
}

/**
 * Virtual time: `sleep` moves the clock forward by the wait at once, so backoffs of an hour take no real
 * time and the times at which things happened are exact. `random` is fixed (no jitter taken off).
 */
function virtualClock(): Clock & { at: number } {
  const clock = {
    at: 0,
    now: () => clock.at,
    random: () => 0,
    sleep: (ms: number, signal?: AbortSignal) => {
      if (signal?.aborted) return Promise.reject(signal.reason as Error);
      clock.at += ms;
      return new Promise<void>((resolve) => setImmediate(resolve));
    },
  };
  return clock;
}

/** The clock's time at each listing request, in order. */
function requestTimes(api: FakeCallsApi, clock: Clock): number[] {
  const times: number[] = [];
  const original = api.listPage.bind(api);
  api.listPage = async (request, signal) => {
    times.push(clock.now());
    return original(request, signal);
  };
  return times;
}

function setup(
  api: FakeCallsApi,
  locations: string[],
  settings: Partial<SchedulerSettings> = {},
  clock: Clock = systemClock,
  dynamic = false,
) {
  const sink = new InMemorySink();
  const metrics = new ConnectorMetrics();
  const enricher = new Enricher({ api, enabled: false, concurrency: 1 });
  const syncFor = (locationUid: string) =>
    unitLocationSync({ locationUid, api, enricher, sink, metrics, clock });
  const syncs = locations.map(syncFor);
  const scheduler = new Scheduler({
    locations: syncs,
    dynamic,
    settings: {
      maxLocationsInFlight: 2,
      intervalMs: 60_000,
      pagesPerTurn: 1,
      shutdownTimeoutMs: 1_000,
      failureBackoff: { ...DEFAULT_RETRY_POLICY, initialDelayMs: 1, maxDelayMs: 5 },
      stoppedRetry: DEFAULT_STOPPED_RETRY,
      ...settings,
    },
    metrics,
    logger: silentLogger(),
    clock,
  });
  return { sink, metrics, scheduler, syncFor };
}

describe('minimumRoundMs', () => {
  it('is one listing request per location at the configured request rate', () => {
    expect(minimumRoundMs(10_000, 20)).toBe(500_000);
    expect(minimumRoundMs(1_000, 20)).toBe(50_000);
  });
});

describe('Scheduler', () => {
  it('completes a traversal of every location and then waits for the poll interval', async () => {
    const locations = [loc(1), loc(2), loc(3)];
    const api = new FakeCallsApi(locations.flatMap((l) => calls(l, 5)));
    // A manual clock: no phase instant comes while the test looks (on the real clock one could, with a location
    // then traversed twice before every location showed one traversal: this test failed once under load).
    const { sink, scheduler } = setup(api, locations, { intervalMs: 3_600_000 }, new ManualClock());
    const stop = new AbortController();
    const running = scheduler.run(stop.signal);
    await eventually(
      () => scheduler.status().every((s) => s.totals.traversalsCompleted === 1),
      5_000,
      'every location traversed',
    );
    expect(sink.calls).toHaveLength(15);
    for (const s of scheduler.status()) {
      // Waiting for the next instant of its phase, within one interval of its traversal's end.
      const wait = (s.nextRunAt ?? 0) - (s.lastSuccessAt ?? 0);
      expect(s.state).toBe('waiting');
      expect(wait).toBeGreaterThan(0);
      expect(wait).toBeLessThanOrEqual(3_600_000);
      // At an instant of its phase: a whole number of intervals from its phase offset. Measured as the distance to
      // the nearest whole number, since floating point may land just below one (a remainder of 3599999.99999...).
      const intervals = ((s.nextRunAt ?? 0) - pollPhase(s.locationUid) * 3_600_000) / 3_600_000;
      expect(Math.abs(intervals - Math.round(intervals))).toBeLessThan(1e-9);
    }
    stop.abort();
    await running;
  });

  it('makes a location that completed a traversal due again at its phase of the interval, one interval apart', async () => {
    const clock = virtualClock();
    const api = new FakeCallsApi(calls(loc(1), 1));
    const { scheduler } = setup(api, [loc(1)], {}, clock);
    const requestedAt = requestTimes(api, clock);
    const stop = new AbortController();
    const running = scheduler.run(stop.signal);
    await eventually(() => requestedAt.length >= 4, 4_000, 'four polls');
    stop.abort();
    await running;
    const phaseMs = pollPhase(loc(1)) * 60_000;
    // The first poll at once; then every poll at the location's phase, one interval apart.
    for (const at of requestedAt.slice(1, 4)) expect((at - phaseMs) % 60_000).toBeCloseTo(0, 6);
    expect((requestedAt[3] ?? 0) - (requestedAt[2] ?? 0)).toBeCloseTo(60_000, 6);
    // The second poll at the first phase instant after the first traversal, however soon: within an interval.
    expect((requestedAt[1] ?? 0) - (requestedAt[0] ?? 0)).toBeLessThanOrEqual(60_000);
  });

  it('keeps backing off a location whose cursor restarts keep failing: a restart in between is no progress', async () => {
    // Issue 20, point 6: a restarted page reset the failure count, so the retry after each
    // CURSOR_RESTARTS_EXHAUSTED came 1-250 ms later, cycle after cycle.
    const clock = { ...virtualClock(), random: () => 0.999 };
    const base = virtualClock();
    clock.now = () => base.now();
    clock.sleep = (ms, signal) => base.sleep(ms, signal);
    const api = new FakeCallsApi([]);
    const { syncFor } = setup(api, [], {}, clock);
    const sync = syncFor(loc(1));
    const pagesAt: number[] = [];
    let page = 0;
    sync.runPage = () => {
      pagesAt.push(clock.now());
      page += 1;
      if (page % 2 === 1)
        return Promise.reject(new RetriableError('CURSOR_RESTARTS_EXHAUSTED', 'cursors rejected'));
      return Promise.resolve({ complete: false, restarted: true, published: 0, lane: 'live' as const });
    };
    const scheduler = new Scheduler({
      locations: [sync],
      dynamic: false,
      settings: {
        maxLocationsInFlight: 1,
        intervalMs: 60_000,
        pagesPerTurn: 1,
        shutdownTimeoutMs: 1_000,
        failureBackoff: { ...DEFAULT_RETRY_POLICY, initialDelayMs: 1_000, maxDelayMs: 60_000, multiplier: 2 },
        stoppedRetry: DEFAULT_STOPPED_RETRY,
      },
      metrics: new ConnectorMetrics(),
      logger: silentLogger(),
      clock,
    });
    const stop = new AbortController();
    const running = scheduler.run(stop.signal);
    await eventually(() => pagesAt.length >= 7, 4_000, 'seven pages');
    stop.abort();
    await running;
    // Failures at pages 1, 3, 5: each retry waits longer than the one before (1 s, 2 s, 4 s ceilings).
    const waits = [1, 3, 5].map((i) => (pagesAt[i] ?? 0) - (pagesAt[i - 1] ?? 0));
    expect(waits[1]).toBeGreaterThan(waits[0] ?? 0);
    expect(waits[2]).toBeGreaterThan(waits[1] ?? 0);
    expect(waits[2]).toBeGreaterThanOrEqual(3_000);
  });

  it('keeps growing the stopped-location backoff when a cursor restart comes before each repeat of the error', async () => {
    // Issue 20, point 6: the restarted page counted as the location resuming, so its backoff stayed at a minute.
    const base = virtualClock();
    const clock: Clock = {
      now: () => base.now(),
      sleep: (ms, signal) => base.sleep(ms, signal),
      random: () => 0.999,
    };
    const { syncFor } = setup(new FakeCallsApi([]), [], {}, clock);
    const sync = syncFor(loc(1));
    const failedAt: number[] = [];
    let page = 0;
    sync.runPage = () => {
      page += 1;
      if (page % 2 === 0)
        return Promise.resolve({ complete: false, restarted: true, published: 0, lane: 'live' as const });
      failedAt.push(clock.now());
      return Promise.reject(new FatalError('API_BAD_REQUEST', 'the API refused the listing'));
    };
    const scheduler = new Scheduler({
      locations: [sync],
      dynamic: true,
      settings: {
        maxLocationsInFlight: 1,
        intervalMs: 60_000,
        pagesPerTurn: 1,
        shutdownTimeoutMs: 1_000,
        failureBackoff: DEFAULT_RETRY_POLICY,
        stoppedRetry: DEFAULT_STOPPED_RETRY,
      },
      metrics: new ConnectorMetrics(),
      logger: silentLogger(),
      clock,
    });
    const stop = new AbortController();
    const running = scheduler.run(stop.signal);
    await eventually(() => failedAt.length >= 4, 4_000, 'four failures');
    stop.abort();
    await running;
    const gaps = failedAt.slice(1).map((at, i) => at - (failedAt[i] ?? 0));
    expect(gaps[1]).toBeGreaterThan(gaps[0] ?? 0);
    expect(gaps[2]).toBeGreaterThan(gaps[1] ?? 0);
  });

  it('keeps one timer for all its idle workers and wakes one worker per location due', async () => {
    const clock = new ManualClock();
    const locations = [loc(1), loc(2), loc(3)];
    const api = new FakeCallsApi(locations.flatMap((l) => calls(l, 1)));
    const { scheduler } = setup(api, locations, { maxLocationsInFlight: 50 }, clock);
    const requestedAt = requestTimes(api, clock);
    const stop = new AbortController();
    const running = scheduler.run(stop.signal);
    await eventually(() => requestedAt.length === 3, 4_000, 'the first round');
    await clock.sleeping(1);
    // Three workers idle after the round: one pending wait between them, the scheduler's timer.
    expect(clock.pending).toBe(1);
    const firstDue = Math.min(...scheduler.status().map((s) => s.nextRunAt ?? Number.POSITIVE_INFINITY));
    clock.advance(firstDue - clock.now());
    await eventually(() => requestedAt.length === 4, 4_000, 'the first location due polled');
    await clock.sleeping(1);
    expect(clock.pending).toBe(1);
    expect(requestedAt[3]).toBe(firstDue);
    stop.abort();
    await running;
    expect(clock.pending).toBe(0);
  });

  it('interleaves locations page by page (fairness)', async () => {
    const locations = [loc(1), loc(2)];
    const api = new FakeCallsApi(locations.flatMap((l) => calls(l, 8)));
    const { scheduler, sink } = setup(api, locations, { maxLocationsInFlight: 1 });
    // Pages in the order they are committed (a location lists its next page ahead while one commits).
    const order: string[] = [];
    sink.beforeCommit = (commit) => void order.push(commit.locationUid);
    const stop = new AbortController();
    const running = scheduler.run(stop.signal);
    await eventually(
      () => scheduler.status().every((s) => s.totals.traversalsCompleted === 1),
      5_000,
      'both traversed',
    );
    stop.abort();
    await running;
    expect(order.slice(0, 4)).toEqual([loc(1), loc(2), loc(1), loc(2)]);
  });

  it('stops only the location with a fatal error; the others go on', async () => {
    const locations = [loc(1), loc(2)];
    const api = new FakeCallsApi(locations.flatMap((l) => calls(l, 3)));
    api.listErrors.push(new FatalError('API_FORBIDDEN', 'no access'));
    const { sink, metrics, scheduler } = setup(api, locations, { maxLocationsInFlight: 1 });
    const stop = new AbortController();
    const running = scheduler.run(stop.signal);
    await eventually(
      () => scheduler.status().some((s) => s.totals.traversalsCompleted === 1),
      5_000,
      'the healthy location traversed',
    );
    const [first, second] = scheduler.status();
    expect(first).toMatchObject({ state: 'stopped', lastError: { code: 'API_FORBIDDEN' } });
    expect(second?.totals.published).toBe(3);
    expect(sink.callsOf(loc(1))).toEqual([]);
    expect((await metrics.locationsStopped.get()).values[0]?.value).toBe(1);
    stop.abort();
    await running;
  });

  it('retries a location after a retriable error, resuming its traversal', async () => {
    const api = new FakeCallsApi(calls(loc(1), 5));
    const { sink, scheduler } = setup(api, [loc(1)]);
    const stop = new AbortController();
    api.listErrors.push(
      new RetriableError('API_UNAVAILABLE', 'down'),
      new RetriableError('API_UNAVAILABLE', 'down'),
    );
    const running = scheduler.run(stop.signal);
    await eventually(
      () => scheduler.status()[0]?.totals.traversalsCompleted === 1,
      5_000,
      'traversal after failures',
    );
    expect(sink.calls).toHaveLength(5);
    expect(scheduler.status()[0]?.lastError?.code).toBe('API_UNAVAILABLE');
    stop.abort();
    await running;
  });

  it('resolves run when every location is stopped by an error only a restart can fix', async () => {
    const api = new FakeCallsApi(calls(loc(1), 1));
    api.listErrors.push(new TypeError('a bug'));
    const { scheduler } = setup(api, [loc(1)]);
    await scheduler.run(new AbortController().signal);
    expect(scheduler.status()[0]).toMatchObject({
      state: 'stopped',
      nextRunAt: null,
      stoppedBy: 'TYPEERROR',
    });
  });

  it('retries a stopped location with a backoff doubling from a minute, and it resumes once the error is gone', async () => {
    const clock = virtualClock();
    const api = new FakeCallsApi(calls(loc(1), 1));
    for (let i = 0; i < 3; i++) api.listErrors.push(new FatalError('API_FORBIDDEN', 'no access'));
    const { sink, metrics, scheduler } = setup(api, [loc(1)], {}, clock);
    const requestedAt: number[] = [];
    const stoppedGauge: Array<number | undefined> = [];
    const original = api.listPage.bind(api);
    api.listPage = async (request, signal) => {
      requestedAt.push(clock.now());
      stoppedGauge.push(
        (await metrics.locationsStopped.get()).values.find((v) => v.labels.code === 'API_FORBIDDEN')?.value,
      );
      return original(request, signal);
    };
    const stop = new AbortController();
    const running = scheduler.run(stop.signal);
    await eventually(() => (scheduler.status()[0]?.totals.traversalsCompleted ?? 0) >= 1, 4_000, 'resumed');
    stop.abort();
    await running;
    // Virtual time runs on through later traversals (at the location's phase): only the first ones matter.
    expect(requestedAt.slice(0, 4)).toEqual([0, 60_000, 180_000, 420_000]);
    expect(stoppedGauge.slice(0, 5)).toEqual([undefined, 1, 1, 1, undefined]);
    expect(sink.callsOf(loc(1))).toHaveLength(1);
    expect(scheduler.status()[0]?.stoppedBy).toBeNull();
    expect((await metrics.locationsStopped.get()).values).toEqual([]);
  });

  it('caps the stopped-location backoff and keeps run going while every location is stopped', async () => {
    const clock = virtualClock();
    const api = new FakeCallsApi(calls(loc(1), 1));
    for (let i = 0; i < 10; i++) api.listErrors.push(new FatalError('CURSOR_LOOP', 'loop'));
    const { scheduler } = setup(api, [loc(1)], {}, clock);
    const requestedAt = requestTimes(api, clock);
    const stop = new AbortController();
    const running = scheduler.run(stop.signal);
    await eventually(() => requestedAt.length >= 10, 4_000, 'ten attempts');
    stop.abort();
    await running;
    const waits = requestedAt.slice(1, 10).map((at, i) => at - (requestedAt[i] ?? 0));
    expect(waits).toEqual([
      60_000, 120_000, 240_000, 480_000, 960_000, 1_920_000, 3_600_000, 3_600_000, 3_600_000,
    ]);
  });

  it('retries a location paused by a revoked grant every minute, without growing the wait', async () => {
    const clock = virtualClock();
    const api = new FakeCallsApi(calls(loc(1), 1));
    for (let i = 0; i < 4; i++) api.listErrors.push(new FatalError('AUTH_GRANT_REVOKED', 'run auth login'));
    const { scheduler } = setup(api, [loc(1)], {}, clock);
    const requestedAt = requestTimes(api, clock);
    const stop = new AbortController();
    const running = scheduler.run(stop.signal);
    await eventually(() => (scheduler.status()[0]?.totals.traversalsCompleted ?? 0) >= 1, 4_000, 'resumed');
    stop.abort();
    await running;
    expect(requestedAt.slice(0, 5)).toEqual([0, 60_000, 120_000, 180_000, 240_000]);
  });

  it('finishes the page in flight on stop and starts no new one', async () => {
    const api = new FakeCallsApi(calls(loc(1), 10));
    const { sink, scheduler } = setup(api, [loc(1)]);
    const stop = new AbortController();
    let release: () => void = () => {};
    sink.beforeCommit = () =>
      new Promise<void>((resolve) => {
        release = resolve;
        stop.abort();
      });
    const running = scheduler.run(stop.signal);
    await eventually(() => stop.signal.aborted, 5_000, 'first commit started');
    release();
    await running;
    expect(sink.commits).toBe(1);
    // The next page was listed ahead while the first committed, and is never committed.
    expect(api.requests).toHaveLength(2);
  });

  it('abandons a page still in flight when the shutdown timeout passes', async () => {
    const api = new FakeCallsApi(calls(loc(1), 10));
    const { sink, scheduler } = setup(api, [loc(1)], { shutdownTimeoutMs: 10, pagesPerTurn: 100 });
    const stop = new AbortController();
    const original = api.listPage.bind(api);
    api.listPage = async (request, signal) => {
      if (api.requests.length >= 2) {
        stop.abort();
        await new Promise((_, reject) =>
          signal?.addEventListener('abort', () => reject(signal.reason as Error)),
        );
      }
      return original(request);
    };
    await scheduler.run(stop.signal);
    expect(sink.commits).toBe(2);
  });

  it('returns within the shutdown timeout even when a commit in flight never settles', async () => {
    // A sink stuck settling a commit (Kafka down) must not hold the process past poll.shutdownTimeoutMs.
    const api = new FakeCallsApi(calls(loc(1), 10));
    const { sink, scheduler } = setup(api, [loc(1)], { shutdownTimeoutMs: 20 });
    const stop = new AbortController();
    sink.beforeCommit = () => {
      stop.abort();
      return new Promise<void>(() => {});
    };
    const outcome = await Promise.race([
      scheduler.run(stop.signal).then(() => 'returned'),
      new Promise((resolve) => setTimeout(resolve, 3_000, 'still waiting')),
    ]);
    expect(outcome).toBe('returned');
    expect(sink.commits).toBe(0);
  });
});

describe('Scheduler membership (distributed mode)', () => {
  /** A listing that holds every request of `location` until `release()` (or its signal aborts). */
  function holdListing(api: FakeCallsApi, location: string) {
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    let entered: () => void = () => {};
    const inFlight = new Promise<void>((resolve) => (entered = resolve));
    const original = api.listPage.bind(api);
    api.listPage = async (request, signal) => {
      if (request.locationUid === location) {
        entered();
        await new Promise<void>((resolve, reject) => {
          void released.then(resolve);
          signal?.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
        });
      }
      return original(request, signal);
    };
    return { release, inFlight };
  }

  it('runs with no location until stopped, and polls the locations added while it runs', async () => {
    const api = new FakeCallsApi([...calls(loc(1), 3), ...calls(loc(2), 3)]);
    const { sink, scheduler, syncFor } = setup(api, [], {}, systemClock, true);
    const stop = new AbortController();
    const running = scheduler.run(stop.signal);
    scheduler.add([syncFor(loc(1)), syncFor(loc(2))]);
    await eventually(
      () => sink.offsets.get(loc(2))?.since === t(2) && sink.offsets.get(loc(1))?.since === t(2),
      5_000,
    );
    expect(scheduler.status().map((s) => s.locationUid)).toEqual([loc(1), loc(2)]);
    stop.abort();
    await running;
  });

  it('refuses to add a location that is already scheduled', () => {
    const { scheduler, syncFor } = setup(new FakeCallsApi(), [loc(1)], {}, systemClock, true);
    expect(() => scheduler.add([syncFor(loc(1))])).toThrow(RangeError);
  });

  it('lets a removed location finish its page in flight, then starts no page of it while the others go on', async () => {
    const api = new FakeCallsApi([...calls(loc(1), 6), ...calls(loc(2), 6)]);
    const held = holdListing(api, loc(1));
    const { sink, scheduler } = setup(api, [loc(1), loc(2)], { intervalMs: 10 }, systemClock, true);
    const stop = new AbortController();
    const running = scheduler.run(stop.signal);
    await held.inFlight;
    let removed = false;
    const removal = scheduler.remove([loc(1)], 60_000).then(() => (removed = true));
    await eventually(() => (sink.offsets.get(loc(2))?.since ?? '') >= t(4), 5_000);
    expect(removed).toBe(false);
    held.release();
    await removal;
    // The page in flight was committed; no later page of loc(1) was listed.
    expect(sink.offsets.get(loc(1))).toMatchObject({ cursor: expect.any(String) as unknown });
    const listedAfter = api.requests.filter((r) => r.locationUid === loc(1)).length;
    expect(scheduler.status().map((s) => s.locationUid)).toEqual([loc(2)]);
    const requestsOf = (location: string) => api.requests.filter((r) => r.locationUid === location).length;
    const othersBefore = requestsOf(loc(2));
    await eventually(() => requestsOf(loc(2)) > othersBefore + 2, 5_000);
    expect(requestsOf(loc(1))).toBe(listedAfter);
    stop.abort();
    await running;
  });

  it('cancels the read-ahead a removed location started during its last page, so it spends no more requests', async () => {
    const api = new FakeCallsApi([...calls(loc(1), 6), ...calls(loc(2), 6)]);
    const signals: AbortSignal[] = [];
    const original = api.listPage.bind(api);
    api.listPage = (request, signal) => {
      if (request.locationUid === loc(1) && signal !== undefined) signals.push(signal);
      return original(request, signal);
    };
    const held = holdListing(api, loc(1));
    const { scheduler } = setup(api, [loc(1), loc(2)], { intervalMs: 10 }, systemClock, true);
    const stop = new AbortController();
    const running = scheduler.run(stop.signal);
    await held.inFlight;
    const removal = scheduler.remove([loc(1)], 60_000);
    held.release();
    await removal;
    // The page in flight committed and listed the next page ahead (the read-ahead), which removal cancelled.
    expect(signals.length).toBeGreaterThanOrEqual(2);
    expect(signals.at(-1)?.aborted).toBe(true);
    stop.abort();
    await running;
  });

  it('aborts the page of a removed location still in flight after the bound, committing nothing of it', async () => {
    const clock = virtualClock();
    const api = new FakeCallsApi(calls(loc(1), 4));
    const held = holdListing(api, loc(1));
    const { sink, scheduler } = setup(api, [loc(1)], {}, clock, true);
    const stop = new AbortController();
    const running = scheduler.run(stop.signal);
    await held.inFlight;
    await scheduler.remove([loc(1)], 5_000);
    expect(sink.commits).toBe(0);
    expect(scheduler.status()).toEqual([]);
    stop.abort();
    await running;
  });
});

/** A scheduler for the lanes tests: polls a minute apart, backoffs of milliseconds, no log. */
function lanesScheduler(
  locations: LocationSync[],
  settings: { maxLocationsInFlight: number; pagesPerTurn: number },
  metrics: ConnectorMetrics,
  clock: Clock,
): Scheduler {
  return new Scheduler({
    locations,
    settings: {
      ...settings,
      intervalMs: 60_000,
      shutdownTimeoutMs: 1_000,
      failureBackoff: { ...DEFAULT_RETRY_POLICY, initialDelayMs: 1, maxDelayMs: 5 },
      stoppedRetry: DEFAULT_STOPPED_RETRY,
    },
    metrics,
    logger: silentLogger(),
    clock,
  });
}

describe('Scheduler with lanes', () => {
  const START = Date.parse('2024-03-01T13:00:00Z');
  const lanesSync = (
    locationUid: string,
    deps: { api: FakeCallsApi; sink: InMemorySink; metrics: ConnectorMetrics; clock: Clock },
    startOffset = EMPTY_OFFSET,
  ) =>
    unitLocationSync({
      locationUid,
      startOffset,
      api: deps.api,
      enricher: new Enricher({ api: deps.api, enabled: false, concurrency: 1 }),
      sink: deps.sink,
      metrics: deps.metrics,
      clock: deps.clock,
      settings: { lanes: { enabled: true, overlapMs: 0, splitBacklogMs: 60_000 } },
    });

  it("runs a location's live lane first, its history in the slots live work leaves, and yields a history turn when live work falls due", async () => {
    const clock = new ManualClock(START);
    const a = loc(1);
    const b = loc(2);
    // A: 40 calls of history (20 pages) and one new call; B: caught up a minute ago, one new call.
    const api = new FakeCallsApi([
      ...calls(a, 40),
      { uid: 'a-new', locationUid: a, updatedAt: '2024-03-01T12:59:00Z' },
      { uid: 'b-new', locationUid: b, updatedAt: '2024-03-01T12:59:30Z' },
    ]);
    api.keysetCursors = true;
    const sink = new InMemorySink();
    const metrics = new ConnectorMetrics();
    const deps = { api, sink, metrics, clock };
    const caughtUp = {
      since: '2024-03-01T12:59:00Z',
      cursor: null,
      watermark: '2024-03-01T12:59:00Z',
      boundary: [],
    };
    const requests: string[] = [];
    let advanced = -1;
    const original = api.listPage.bind(api);
    api.listPage = async (request: PageRequest, signal?: AbortSignal, hint?: RequestHint) => {
      const order = request.kind === 'first' ? request.order : 'asc';
      requests.push(`${request.locationUid.slice(-1)}:${hint?.priority ?? '-'}:${order}`);
      // In A's 4th history page, B's next poll falls due.
      if (
        request.locationUid === a &&
        hint?.priority === 'backfill' &&
        requests.filter((r) => r === '1:backfill:asc').length === 4
      ) {
        advanced = requests.length; // the index of the next request
        clock.advance(60_000);
      }
      return original(request, signal);
    };
    const scheduler = lanesScheduler(
      [lanesSync(a, deps), lanesSync(b, deps, caughtUp)],
      { maxLocationsInFlight: 1, pagesPerTurn: 100 },
      metrics,
      clock,
    );
    const stop = new AbortController();
    const running = scheduler.run(stop.signal);
    await eventually(
      () => sink.calls.length === 42 && !scheduler.status().some((s) => s.state === 'running'),
      5_000,
      'all published',
    );
    stop.abort();
    clock.advance(120_000);
    await running;

    // A's split check and live lane, then B's live poll, and only then A's history.
    expect(requests.slice(0, 4)).toEqual(['1:live:desc', '1:live:asc', '2:live:asc', '1:backfill:asc']);
    // Once B fell due, it was polled after at most the history page read ahead.
    const bPoll = requests.indexOf('2:live:asc', advanced);
    expect(bPoll).toBeGreaterThanOrEqual(advanced);
    expect(bPoll - advanced, requests.join(' ')).toBeLessThanOrEqual(1);
    // Every call once; A's history merged.
    expect(new Set(sink.calls.map((c) => c.uid)).size).toBe(42);
    expect(sink.offsets.get(a)?.history).toBeUndefined();
  });
});

describe('Scheduler with lanes: history pages read in the background', () => {
  it("publishes a change of a backfilling location while its history page's single calls are still outstanding", async () => {
    const clock = new ManualClock(Date.parse('2024-03-01T13:00:00Z'));
    const a = loc(1);
    const api = new FakeCallsApi([
      ...calls(a, 10),
      { uid: 'a-newest', locationUid: a, updatedAt: '2024-03-01T12:59:00Z' },
    ]);
    api.keysetCursors = true;
    // The single calls of history (a's numbered calls) wait for the gate: a slow, rate-limited backfill.
    let open = (): void => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const getCall = api.getCall.bind(api);
    let historyWaiting = 0;
    api.getCall = async (uid: string) => {
      if (/^01-\d+$/.test(uid)) {
        historyWaiting += 1;
        await gate;
      }
      return getCall(uid);
    };
    const sink = new InMemorySink();
    const metrics = new ConnectorMetrics();
    const sync = unitLocationSync({
      locationUid: a,
      api,
      enricher: new Enricher({ api, enabled: true, concurrency: 2 }),
      sink,
      metrics,
      clock,
      settings: { lanes: { enabled: true, overlapMs: 0, splitBacklogMs: 60_000 } },
    });
    const scheduler = lanesScheduler([sync], { maxLocationsInFlight: 2, pagesPerTurn: 10 }, metrics, clock);
    const stop = new AbortController();
    const running = scheduler.run(stop.signal);
    const published = (uid: string) => sink.calls.some((c) => c.uid === uid);
    await eventually(() => published('a-newest') && historyWaiting > 0, 5_000, 'split, live published');
    // A change after the split, while the history page waits for its single calls.
    api.upsert({ uid: 'a-change', locationUid: a, updatedAt: '2024-03-01T13:00:30Z' });
    clock.advance(60_000);
    await eventually(() => published('a-change'), 2_000, 'the change published by the live poll');
    expect(sink.calls.filter((c) => /^01-/.test(c.uid))).toEqual([]);
    open();
    await eventually(() => !sync.hasHistory, 5_000, 'history merged');
    stop.abort();
    clock.advance(120_000);
    await running;
    expect(new Set(sink.calls.map((c) => c.uid)).size).toBe(12);
    expect(sink.calls.length).toBe(12);
  });
});

describe('Scheduler history slots', () => {
  it('runs history turns in at most half the slots, so live work always finds a worker', async () => {
    const clock = new ManualClock(Date.parse('2024-03-01T13:00:00Z'));
    const locations = [loc(1), loc(2), loc(3), loc(4)];
    const api = new FakeCallsApi([
      ...locations.flatMap((l) => calls(l, 20)),
      ...locations.map((l) => ({
        uid: `${l.slice(-1)}-new`,
        locationUid: l,
        updatedAt: '2024-03-01T12:59:00Z',
      })),
    ]);
    api.keysetCursors = true;
    const sink = new InMemorySink();
    const metrics = new ConnectorMetrics();
    // Every listing takes a turn of the event loop, so the turns of several locations overlap.
    const original = api.listPage.bind(api);
    api.listPage = async (request: PageRequest, signal?: AbortSignal) => {
      await new Promise((resolve) => setImmediate(resolve));
      return original(request, signal);
    };
    // Commits take a turn of the event loop too: history turns (a commit of a page read ahead) overlap.
    const commitPage = sink.commitPage.bind(sink);
    sink.commitPage = async (commit) => {
      await new Promise((resolve) => setImmediate(resolve));
      return commitPage(commit);
    };
    let historyTurns = 0;
    let mostHistoryTurns = 0;
    const syncs = locations.map(
      (locationUid) =>
        new LocationSync({
          locationUid,
          startOffset: EMPTY_OFFSET,
          api,
          enricher: new Enricher({ api, enabled: false, concurrency: 1 }),
          sink,
          metrics,
          logger: silentLogger(),
          clock,
          settings: {
            pageSize: 2,
            startSince: null,
            boundaryCap: 100,
            privacy: 'redact-unless-public',
            fingerprints: testFingerprints,
            commitRetry: DEFAULT_RETRY_POLICY,
            lanes: { enabled: true, overlapMs: 0, splitBacklogMs: 60_000 },
          },
        }),
    );
    for (const sync of syncs) {
      const runPage = sync.runPage.bind(sync);
      sync.runPage = async (signal, lane) => {
        if (lane !== 'history') return runPage(signal, lane);
        historyTurns += 1;
        mostHistoryTurns = Math.max(mostHistoryTurns, historyTurns);
        try {
          return await runPage(signal, lane);
        } finally {
          historyTurns -= 1;
        }
      };
    }
    const scheduler = lanesScheduler(syncs, { maxLocationsInFlight: 4, pagesPerTurn: 3 }, metrics, clock);
    const stop = new AbortController();
    const running = scheduler.run(stop.signal);
    await eventually(
      () => syncs.every((s) => !s.hasHistory) && sink.calls.length === 84,
      5_000,
      'all merged',
    );
    stop.abort();
    clock.advance(120_000);
    await running;
    expect(mostHistoryTurns).toBe(2);
  });
});
