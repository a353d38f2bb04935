import { describe, expect, it } from 'vitest';
import { pollPhase } from '../../../../src/sync/scheduler/poll-phase.js';
import { Scheduler } from '../../../../src/sync/scheduler/scheduler.js';
import { deferred, settles } from '../../../support/async.js';
import { ManualClock } from '../../../support/clock.js';
import { driveUntil, loc, started, testScheduler } from '../../../support/sync/scheduler-harness.js';
import { page, ScriptedLocation } from '../../../support/sync/scripted-location.js';
import { DEFAULT_RETRY_POLICY } from '../../../../src/api/retry-policy.js';
import { DEFAULT_STOPPED_RETRY } from '../../../../src/sync/scheduler/health-rule.js';
import { silentLogger } from '../../../../src/logging/logger.js';
import { testMetrics } from '../../../support/metrics.js';

describe('Scheduler', () => {
  it('completes a traversal of every location and then waits for the next instant of its phase', async () => {
    const clock = new ManualClock();
    const locations = [1, 2, 3].map((n) => new ScriptedLocation(loc(n), clock, page.more(), page.more()));
    const { scheduler } = testScheduler({ locations, clock, settings: { intervalMs: 3_600_000 } });
    const run = started(scheduler);
    await settles(
      () => scheduler.status().every((s) => s.totals.traversalsCompleted === 1),
      'every traversal',
    );
    expect(locations.map((l) => l.runs.length)).toEqual([3, 3, 3]);
    for (const s of scheduler.status()) {
      // Waiting for the next instant of its phase, within one interval of its traversal's end.
      const wait = (s.nextRunAt ?? 0) - (s.lastSuccessAt ?? 0);
      expect(s.state).toBe('waiting');
      expect(wait).toBeGreaterThan(0);
      expect(wait).toBeLessThanOrEqual(3_600_000);
      // A whole number of intervals from its phase offset (to the nearest whole number: floating point).
      const intervals = ((s.nextRunAt ?? 0) - pollPhase(s.locationUid) * 3_600_000) / 3_600_000;
      expect(Math.abs(intervals - Math.round(intervals))).toBeLessThan(1e-9);
    }
    await run.stop();
  });

  it('polls a location that completed its traversal again at its phase of the interval, one interval apart', async () => {
    const clock = new ManualClock();
    const location = new ScriptedLocation(loc(1), clock);
    const { scheduler } = testScheduler({ locations: [location], clock });
    const run = started(scheduler);
    await driveUntil(scheduler, clock, () => location.runs.length >= 4, 'four polls');
    await run.stop();
    const at = location.runs.map((r) => r.at);
    const phaseMs = pollPhase(loc(1)) * 60_000;
    // The first poll at once; then every poll at the location's phase, one interval apart.
    expect(at[0]).toBe(0);
    for (const t of at.slice(1, 4)) expect((t - phaseMs) % 60_000).toBeCloseTo(0, 6);
    expect((at[3] ?? 0) - (at[2] ?? 0)).toBeCloseTo(60_000, 6);
    // The second poll at the first phase instant after the first traversal, however soon: within an interval.
    expect((at[1] ?? 0) - (at[0] ?? 0)).toBeLessThanOrEqual(60_000);
  });

  it('keeps one timer for all its idle workers and wakes one worker per location due', async () => {
    const clock = new ManualClock();
    const locations = [1, 2, 3].map((n) => new ScriptedLocation(loc(n), clock));
    const { scheduler } = testScheduler({ locations, clock, settings: { maxLocationsInFlight: 50 } });
    const pages = () => locations.reduce((sum, l) => sum + l.runs.length, 0);
    const run = started(scheduler);
    await settles(() => pages() === 3 && clock.pending > 0, 'the first round');
    // Three workers idle after the round: one pending wait between them, the scheduler's timer.
    expect(clock.pending).toBe(1);
    const firstDue = Math.min(...scheduler.status().map((s) => s.nextRunAt ?? Number.POSITIVE_INFINITY));
    clock.advance(firstDue - clock.now());
    await settles(() => pages() === 4 && clock.pending > 0, 'the first location due polled');
    expect(clock.pending).toBe(1);
    expect(locations.flatMap((l) => l.runs.map((r) => r.at)).sort((a, b) => a - b)[3]).toBe(firstDue);
    await run.stop();
    expect(clock.pending).toBe(0);
  });

  it('interleaves locations page by page (fairness)', async () => {
    const clock = new ManualClock();
    const journal: string[] = [];
    const locations = [1, 2].map((n) => new ScriptedLocation(loc(n), clock, page.more(), page.more()));
    for (const location of locations) location.journal = journal;
    const { scheduler } = testScheduler({ locations, clock, settings: { maxLocationsInFlight: 1 } });
    const run = started(scheduler);
    await settles(
      () => scheduler.status().every((s) => s.totals.traversalsCompleted === 1),
      'both traversed',
    );
    await run.stop();
    expect(journal).toEqual(['1:live', '2:live', '1:live', '2:live', '1:live', '2:live']);
  });

  it('refuses settings it cannot run and a location listed twice', () => {
    const clock = new ManualClock();
    const settings = {
      maxLocationsInFlight: 1,
      intervalMs: 60_000,
      pagesPerTurn: 1,
      shutdownTimeoutMs: 1_000,
      failureBackoff: DEFAULT_RETRY_POLICY,
      stoppedRetry: DEFAULT_STOPPED_RETRY,
    };
    const build = (locations: ScriptedLocation[], overrides = {}) =>
      new Scheduler({
        locations,
        settings: { ...settings, ...overrides },
        metrics: testMetrics(),
        logger: silentLogger(),
        clock,
      });
    expect(() => build([], { maxLocationsInFlight: 0 })).toThrow(RangeError);
    expect(() => build([], { pagesPerTurn: 1.5 })).toThrow(RangeError);
    const twice = [new ScriptedLocation(loc(1), clock), new ScriptedLocation(loc(1), clock)];
    expect(() => build(twice)).toThrow(RangeError);
  });
});

describe('Scheduler: graceful stop', () => {
  it('finishes the page in flight on stop and starts no new one', async () => {
    const clock = new ManualClock();
    const release = deferred();
    const location = new ScriptedLocation(loc(1), clock, page.heldUntil(release.promise, page.more()));
    // Ten pages a turn: the stop, not the end of the turn, keeps the next page from starting.
    const { scheduler } = testScheduler({ locations: [location], clock, settings: { pagesPerTurn: 10 } });
    const run = started(scheduler);
    await settles(() => location.runs.length === 1, 'the first page started');
    const stopping = run.stop();
    release.resolve();
    await stopping;
    expect(location.runs).toHaveLength(1);
    // The page went through: its signal was never aborted, and its calls were counted.
    expect(location.runs[0]?.signal?.aborted).toBe(false);
    expect(location.totals.pages).toBe(1);
  });

  it('aborts a page still in flight when the shutdown timeout passes', async () => {
    const clock = new ManualClock();
    const location = new ScriptedLocation(loc(1), clock, page.more());
    const { scheduler } = testScheduler({
      locations: [location],
      clock,
      settings: { shutdownTimeoutMs: 10, pagesPerTurn: 100 },
    });
    const controller = new AbortController();
    // The second page: the stop comes while it runs, and it ends only when its signal aborts.
    location.then(async (run) => {
      controller.abort();
      return page.heldUntil(new Promise<void>(() => undefined))(run);
    });
    // The shutdown timeout passes in real time: the ManualClock is never moved.
    await scheduler.run(controller.signal);
    expect(location.runs).toHaveLength(2);
    expect(location.runs[1]?.signal?.aborted).toBe(true);
    expect(location.totals.pages).toBe(1);
  });

  it('returns within the shutdown timeout even when a page in flight never settles', async () => {
    // A sink stuck settling a commit (Kafka down) must not hold the process past poll.shutdownTimeoutMs.
    const clock = new ManualClock();
    const controller = new AbortController();
    const location = new ScriptedLocation(loc(1), clock, (run) => {
      controller.abort();
      return page.stuck()(run);
    });
    const { scheduler } = testScheduler({
      locations: [location],
      clock,
      settings: { shutdownTimeoutMs: 20 },
    });
    // Resolves (the test's own timeout would fail it otherwise) with the page still unsettled.
    await scheduler.run(controller.signal);
    expect(location.runs).toHaveLength(1);
    expect(location.runs[0]?.signal?.aborted).toBe(true);
    expect(location.totals.pages).toBe(0);
  });
});
