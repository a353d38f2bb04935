import { describe, expect, it } from 'vitest';
import { RetriableError } from '../../../../src/errors/index.js';
import type { RateLimitScopes } from '../../../../src/sync/ports.js';
import { settles } from '../../../support/async.js';
import { ManualClock } from '../../../support/clock.js';
import {
  eventLoopTurns,
  loc,
  runFor,
  started,
  testScheduler,
} from '../../../support/sync/scheduler-harness.js';
import { ScriptedLocation } from '../../../support/sync/scripted-location.js';

const INTERVAL = 60_000;

/**
 * A location whose live page takes `costMs` on the clock (its requests waiting at a tight rate limit), and
 * whose history pages (when split) take a tenth of that.
 */
function slowLocation(uid: string, clock: ManualClock, costMs: number): ScriptedLocation {
  const location = new ScriptedLocation(uid, clock);
  location.otherwise = async (run) => {
    await clock.sleep(run.lane === 'live' ? costMs : costMs / 10, run.signal);
    return { complete: run.lane === 'live', published: 1 };
  };
  return location;
}

describe('Scheduler shares (issue 32)', () => {
  // The review's case is 3 locations at 0.6 × the interval; with phased polls that leaves the two workers slack
  // for history even before the fix, so 4 locations make the live demand (2.4 workers) exceed the workers.
  it('gives history its share of the turns while live polls alone fill every worker (review L1)', async () => {
    const clock = new ManualClock();
    const locations = [1, 2, 3, 4].map((n) => slowLocation(loc(n), clock, 0.6 * INTERVAL));
    const split = locations[0] as ScriptedLocation;
    split.hasHistory = true;
    split.ahead = { state: 'ready' };
    const { scheduler, metrics } = testScheduler({
      locations,
      clock,
      settings: { maxLocationsInFlight: 2, intervalMs: INTERVAL },
    });
    const run = started(scheduler);
    await runFor(clock, 10 * INTERVAL, INTERVAL / 20);
    // History advances throughout, not only in the slack of the first rounds: pages in the last five intervals.
    expect(split.runsOf('history').filter((r) => r.at >= 5 * INTERVAL).length).toBeGreaterThan(0);
    // Every location still polled, at an interval stretched evenly for all (none left waiting for a worker).
    for (const location of locations) expect(location.runsOf('live').length).toBeGreaterThanOrEqual(5);
    const effective = (
      await metrics.registry.getSingleMetric('calls_connector_poll_effective_interval_seconds')?.get()
    )?.values[0]?.value;
    expect(effective).toBeGreaterThan(INTERVAL / 1000);
    await run.stop();
  });

  it('polls another grant every interval while one grant is held for an hour, its locations parked without a worker (review L2)', async () => {
    const clock = new ManualClock();
    const hourEnd = 3_600_000;
    const grantOf = new Map([
      [loc(1), 'G'],
      [loc(2), 'G'],
      [loc(3), 'G'],
      [loc(4), 'H'],
    ]);
    const scopes: RateLimitScopes = {
      scopeOf: (uid) => grantOf.get(uid) ?? 'global',
      heldUntil: (scope) => (scope === 'G' && clock.now() < hourEnd ? hourEnd : null),
      ratePerSecond: () => null,
    };
    // G's pages would wait in the rate limiter until the hold ends.
    const onG = [1, 2, 3].map((n) => {
      const location = new ScriptedLocation(loc(n), clock);
      location.otherwise = async (run) => {
        if (clock.now() < hourEnd) await clock.sleep(hourEnd - clock.now(), run.signal);
        return { complete: true, published: 1 };
      };
      return location;
    });
    const onH = new ScriptedLocation(loc(4), clock);
    const { scheduler } = testScheduler({
      locations: [...onG, onH],
      clock,
      settings: { maxLocationsInFlight: 2, intervalMs: INTERVAL },
      scopes,
    });
    const run = started(scheduler);
    await runFor(clock, 10 * INTERVAL, INTERVAL / 10);
    const polls = onH.runsOf('live').map((r) => r.at);
    expect(polls.length).toBeGreaterThanOrEqual(10);
    for (let i = 2; i < polls.length; i++) expect((polls[i] ?? 0) - (polls[i - 1] ?? 0)).toBe(INTERVAL);
    // G's locations took no worker: parked, throttled, until the hold's end.
    for (const location of onG) expect(location.runs).toEqual([]);
    const gStatus = scheduler.status().filter((s) => grantOf.get(s.locationUid) === 'G');
    expect(gStatus.map((s) => [s.state, s.nextRunAt])).toEqual(Array(3).fill(['throttled', hourEnd]));
    // Once the hold ends, G's locations are polled again.
    clock.advance(hourEnd - clock.now());
    await settles(() => onG.every((l) => l.runs.length === 1), "G's polls after the hold");
    await run.stop();
  });

  it('parks a location whose page failed because its grant was parked meanwhile, without counting a failure', async () => {
    const clock = new ManualClock();
    let heldUntil: number | null = null;
    const location = new ScriptedLocation(loc(1), clock);
    location.otherwise = () => {
      if (heldUntil === null) {
        // The grant's quota is spent during this page: the limiter refuses its requests (a retriable error).
        heldUntil = clock.now() + 300_000;
        return Promise.reject(new RetriableError('API_SCOPE_THROTTLED', 'parked'));
      }
      return { complete: true, published: 1 };
    };
    const { scheduler } = testScheduler({
      locations: [location],
      clock,
      scopes: {
        scopeOf: () => 'G',
        heldUntil: () => (heldUntil !== null && clock.now() < heldUntil ? heldUntil : null),
        ratePerSecond: () => null,
      },
    });
    const run = started(scheduler);
    await settles(() => scheduler.status()[0]?.state === 'throttled', 'the location parked');
    expect(scheduler.status()[0]).toMatchObject({
      nextRunAt: 300_000,
      consecutiveFailures: 0,
      lastError: null,
    });
    clock.advance(300_000);
    await settles(() => location.runs.length === 2, 'polled again once the hold ended');
    await run.stop();
  });

  it('shares the workers between grants in turn: one grant with many locations due does not take them all', async () => {
    const clock = new ManualClock();
    const journal: string[] = [];
    const grantOf = (uid: string) => (uid === loc(9) ? 'H' : 'G');
    const locations = [1, 2, 3, 4, 9].map((n) => {
      const location = new ScriptedLocation(loc(n), clock);
      location.journal = journal;
      return location;
    });
    const { scheduler } = testScheduler({
      locations,
      clock,
      settings: { maxLocationsInFlight: 1 },
      scopes: { scopeOf: grantOf, heldUntil: () => null, ratePerSecond: () => null },
    });
    const run = started(scheduler);
    await settles(() => journal.length === 5, 'the first round');
    // H's one location is polled second, not after every one of G's.
    expect(journal[1]).toBe('9:live');
    await run.stop();
  });
});

describe('Scheduler shares with nudges (issue 33)', () => {
  /** Moves the clock like runFor, nudging `nudged` at every step (a flood of deliveries). */
  async function floodFor(clock: ManualClock, nudge: () => void, total: number, step: number): Promise<void> {
    for (let moved = 0; moved < total; moved += step) {
      nudge();
      await eventLoopTurns();
      clock.advance(step);
    }
    await eventLoopTurns();
  }

  it('lets scheduled polls and history advance at their shares while a flood of deliveries keeps nudging', async () => {
    const clock = new ManualClock();
    const journal: string[] = [];
    // Every page takes the same time (turns are counted). Scheduled: five locations whose polls alone would take
    // 1.5 workers, the first split, its history ready. Nudged: two locations a delivery names at every step.
    const evenLocation = (n: number) => {
      const location = new ScriptedLocation(loc(n), clock);
      location.otherwise = async (run) => {
        await clock.sleep(0.3 * INTERVAL, run.signal);
        return { complete: run.lane === 'live', published: 1 };
      };
      location.journal = journal;
      return location;
    };
    const scheduled = [1, 2, 3, 4, 5].map(evenLocation);
    const nudged = [8, 9].map(evenLocation);
    const split = scheduled[0] as ScriptedLocation;
    split.hasHistory = true;
    split.ahead = { state: 'ready' };
    const { scheduler } = testScheduler({
      locations: [...scheduled, ...nudged],
      clock,
      settings: { maxLocationsInFlight: 1, intervalMs: INTERVAL, historyShare: 0.25, nudgeShare: 0.25 },
    });
    const run = started(scheduler);
    await floodFor(
      clock,
      () => nudged.forEach((l) => scheduler.nudge(l.locationUid)),
      40 * INTERVAL,
      INTERVAL / 20,
    );
    await run.stop();
    // Every kind of work waited throughout (the scheduled polls but for the slack their stretched interval
    // leaves them): each took about its share of the turns (pages): history and nudges 1/4, scheduled 1/2.
    const turns = journal.slice(10);
    const share = (match: (entry: string) => boolean) => turns.filter(match).length / turns.length;
    expect(turns.length).toBeGreaterThan(100);
    expect(share((e) => e.endsWith(':history'))).toBeGreaterThanOrEqual(0.2);
    expect(share((e) => /^[1-5]:live$/.test(e))).toBeGreaterThanOrEqual(0.4);
    expect(share((e) => /^[89]:live$/.test(e))).toBeGreaterThanOrEqual(0.2);
  });

  it('runs a nudged poll within a turn or two while scheduled polls alone fill every worker', async () => {
    const clock = new ManualClock();
    const journal: string[] = [];
    // Six scheduled locations whose polls would take three workers: all of them are always overdue.
    const scheduled = [1, 2, 3, 4, 5, 6].map((n) => slowLocation(loc(n), clock, 0.5 * INTERVAL));
    const nudged = slowLocation(loc(9), clock, 0.05 * INTERVAL);
    for (const location of [...scheduled, nudged]) location.journal = journal;
    const { scheduler } = testScheduler({
      locations: [...scheduled, nudged],
      clock,
      settings: { maxLocationsInFlight: 1, intervalMs: INTERVAL, nudgeShare: 0.25 },
    });
    const run = started(scheduler);
    await runFor(clock, 10 * INTERVAL, INTERVAL / 20);
    // Nudged between its polls (one in progress would take a follow-up instead).
    const polling = () =>
      scheduler.status().find((s) => s.locationUid === nudged.locationUid)?.state === 'running';
    while (polling()) await runFor(clock, INTERVAL / 20, INTERVAL / 20);
    const before = nudged.runs.length;
    expect(scheduler.nudge(nudged.locationUid)).toBe('due_now');
    const from = journal.length;
    await runFor(clock, 3 * INTERVAL, INTERVAL / 20);
    await run.stop();
    // Not behind every overdue scheduled poll (six of them): it had the next turn but one.
    expect(nudged.runs.length).toBeGreaterThan(before);
    const scheduledFirst = journal.slice(from).indexOf('9:live');
    expect(scheduledFirst).toBeGreaterThanOrEqual(0);
    expect(scheduledFirst).toBeLessThanOrEqual(2);
  });
});
