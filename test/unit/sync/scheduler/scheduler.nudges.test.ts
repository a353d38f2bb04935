import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_POLICY } from '../../../../src/api/retry-policy.js';
import { RetriableError } from '../../../../src/errors/index.js';
import { deferred, settles } from '../../../support/async.js';
import { ManualClock } from '../../../support/clock.js';
import { loc, started, testScheduler } from '../../../support/sync/scheduler-harness.js';
import { page, ScriptedLocation } from '../../../support/sync/scripted-location.js';

/** The location's first traversal is done and it waits for its phase (the clock never moved). */
async function idleAfterFirstPoll(location: ScriptedLocation, clock: ManualClock): Promise<void> {
  await settles(() => location.runs.length === 1 && clock.pending > 0, 'the first poll');
}

describe('Scheduler nudges', () => {
  it('polls a waiting location at once when it is nudged, then returns to its phase', async () => {
    const clock = new ManualClock();
    const location = new ScriptedLocation(loc(1), clock);
    const { scheduler } = testScheduler({
      locations: [location],
      clock,
      settings: { intervalMs: 3_600_000 },
    });
    const run = started(scheduler);
    await idleAfterFirstPoll(location, clock);
    const phased = scheduler.status()[0]?.nextRunAt ?? 0;
    expect(phased).toBeGreaterThan(clock.now());

    clock.advance(1_000);
    expect(scheduler.nudge(loc(1))).toBe('due_now');
    await settles(() => location.runs.length === 2 && clock.pending > 0, 'the nudged poll');
    expect(location.runs[1]?.at).toBe(1_000);
    expect(location.runs[1]?.lane).toBe('live');
    // Due again at its phase of the interval, as after any completed traversal.
    expect(scheduler.status()[0]?.nextRunAt).toBe(phased);
    await run.stop();
  });

  it('coalesces nudges to a location already due into one nudged poll', async () => {
    const clock = new ManualClock();
    const other = new ScriptedLocation(loc(2), clock, page.heldUntil(new Promise(() => undefined)));
    const location = new ScriptedLocation(loc(1), clock);
    // One worker, held by the other location: the nudged one stays due until the test looks.
    const { scheduler } = testScheduler({
      locations: [other, location],
      clock,
      settings: { maxLocationsInFlight: 1, shutdownTimeoutMs: 10 },
    });
    const run = started(scheduler);
    await settles(() => other.runs.length === 1, 'the other location holds the worker');
    // Due since the start for its schedule: the nudge moves it to the nudges, once.
    expect(scheduler.nudge(loc(1))).toBe('due_now');
    expect(scheduler.nudge(loc(1))).toBe('coalesced');
    expect(scheduler.nudge(loc(1))).toBe('coalesced');
    expect(location.runs).toHaveLength(0);
    await run.stop();
  });

  it('gives a location nudged while it polls exactly one follow-up poll, however many nudges came', async () => {
    const clock = new ManualClock();
    const release = deferred();
    const location = new ScriptedLocation(loc(1), clock, page.heldUntil(release.promise));
    const { scheduler } = testScheduler({
      locations: [location],
      clock,
      settings: { intervalMs: 3_600_000 },
    });
    const run = started(scheduler);
    await settles(() => location.runs.length === 1, 'the first poll started');
    expect([1, 2, 3].map(() => scheduler.nudge(loc(1)))).toEqual(['follow_up', 'coalesced', 'coalesced']);
    release.resolve();
    await settles(() => location.runs.length === 2 && clock.pending > 0, 'the follow-up poll');
    expect(location.runs[1]?.at).toBe(0);
    // Only one: after the follow-up the location waits for its phase.
    expect(scheduler.status()[0]?.nextRunAt ?? 0).toBeGreaterThan(clock.now());
    expect(location.runs).toHaveLength(2);
    await run.stop();
  });

  it('keeps the follow-up until the traversal in progress completes, not at the end of its turn', async () => {
    const clock = new ManualClock();
    const release = deferred();
    const location = new ScriptedLocation(
      loc(1),
      clock,
      page.heldUntil(release.promise, page.more()),
      page.more(),
    );
    const { scheduler } = testScheduler({
      locations: [location],
      clock,
      settings: { intervalMs: 3_600_000 },
    });
    const run = started(scheduler);
    await settles(() => location.runs.length === 1, 'the first page started');
    expect(scheduler.nudge(loc(1))).toBe('follow_up');
    release.resolve();
    // Pages 1-3 are the traversal (one page a turn), page 4 the follow-up; then the phase.
    await settles(() => location.runs.length === 4 && clock.pending > 0, 'the traversal and its follow-up');
    expect(location.totals.traversalsCompleted).toBe(2);
    expect(scheduler.status()[0]?.nextRunAt ?? 0).toBeGreaterThan(clock.now());
    await run.stop();
  });

  it('gives a location nudged during its history turn its live poll as soon as that turn ends', async () => {
    const clock = new ManualClock();
    const release = deferred();
    const location = new ScriptedLocation(loc(1), clock);
    const { scheduler } = testScheduler({
      locations: [location],
      clock,
      settings: { intervalMs: 3_600_000 },
    });
    location.hasHistory = true;
    location.ahead = { state: 'ready' };
    location.then(page.complete(), page.heldUntil(release.promise, page.more()));
    const run = started(scheduler);
    await settles(() => location.runsOf('history').length === 1, 'a history turn started');
    expect(scheduler.nudge(loc(1))).toBe('follow_up');
    location.hasHistory = false;
    release.resolve();
    await settles(() => location.runsOf('live').length === 2, 'the nudged live poll');
    expect(location.runsOf('live')[1]?.at).toBe(0);
    await run.stop();
  });

  it('leaves a location in backoff to its health rule, and answers unknown for a location not scheduled', async () => {
    const clock = new ManualClock();
    const location = new ScriptedLocation(
      loc(1),
      clock,
      page.fails(new RetriableError('API_UNAVAILABLE', 'down')),
    );
    const { scheduler } = testScheduler({
      locations: [location],
      clock,
      settings: {
        failureBackoff: { ...DEFAULT_RETRY_POLICY, initialDelayMs: 60_000, maxDelayMs: 60_000 },
      },
    });
    const run = started(scheduler);
    await settles(() => scheduler.status()[0]?.state === 'backoff' && clock.pending > 0, 'the backoff');
    const due = scheduler.status()[0]?.nextRunAt;
    expect(scheduler.nudge(loc(1))).toBe('held');
    expect(scheduler.status()[0]?.nextRunAt).toBe(due);
    expect(scheduler.nudge(loc(9))).toBe('unknown');
    await run.stop();
  });

  it('answers unknown for a location removed from a dynamic scheduler', async () => {
    const clock = new ManualClock();
    const location = new ScriptedLocation(loc(1), clock);
    const { scheduler } = testScheduler({ locations: [location], clock, dynamic: true });
    const run = started(scheduler);
    await idleAfterFirstPoll(location, clock);
    await scheduler.remove([loc(1)], 1_000);
    expect(scheduler.nudge(loc(1))).toBe('unknown');
    await run.stop();
  });
});
