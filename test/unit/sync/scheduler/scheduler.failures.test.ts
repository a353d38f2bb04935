import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_POLICY } from '../../../../src/api/retry-policy.js';
import { FatalError, RetriableError } from '../../../../src/errors/index.js';
import type { ConnectorMetrics } from '../../../../src/metrics/metrics.js';
import { settles } from '../../../support/async.js';
import { ManualClock } from '../../../support/clock.js';
import { driveUntil, loc, started, testScheduler } from '../../../support/sync/scheduler-harness.js';
import { page, ScriptedLocation, type PageStep } from '../../../support/sync/scripted-location.js';

/** The gauge locations_stopped for `code` now (undefined: not set). */
async function stoppedGauge(metrics: ConnectorMetrics, code: string): Promise<number | undefined> {
  return (await metrics.locationsStopped.get()).values.find((v) => v.labels.code === code)?.value;
}

describe('Scheduler: failing and stopped locations', () => {
  it('stops only the location with a fatal error; the others go on', async () => {
    const clock = new ManualClock();
    const failing = new ScriptedLocation(
      loc(1),
      clock,
      page.fails(new FatalError('API_FORBIDDEN', 'no access')),
    );
    const healthy = new ScriptedLocation(loc(2), clock, page.more(), page.more(), page.complete());
    const { scheduler, metrics } = testScheduler({
      locations: [failing, healthy],
      clock,
      settings: { maxLocationsInFlight: 1 },
    });
    const run = started(scheduler);
    await settles(() => healthy.totals.traversalsCompleted === 1, 'the healthy location traversed');
    const [first, second] = scheduler.status();
    expect(first).toMatchObject({
      state: 'stopped',
      lastError: { code: 'API_FORBIDDEN' },
      stoppedBy: 'API_FORBIDDEN',
    });
    expect(second?.totals.published).toBe(3);
    expect(failing.runs).toHaveLength(1);
    expect((await metrics.locationsStopped.get()).values.map((v) => v.value)).toEqual([1]);
    await run.stop();
  });

  it('retries a location after a retriable error, resuming its traversal', async () => {
    const clock = new ManualClock();
    const down = page.fails(new RetriableError('API_UNAVAILABLE', 'down'));
    const location = new ScriptedLocation(loc(1), clock, page.more(), down, down, page.complete());
    const { scheduler } = testScheduler({ locations: [location], clock });
    const run = started(scheduler);
    await driveUntil(scheduler, clock, () => location.totals.traversalsCompleted === 1, 'the traversal');
    expect(location.runs).toHaveLength(4);
    expect(scheduler.status()[0]).toMatchObject({
      lastError: { code: 'API_UNAVAILABLE' },
      consecutiveFailures: 0,
      stoppedBy: null,
    });
    await run.stop();
  });

  it('resolves run when every location is stopped by an error only a restart can fix', async () => {
    const clock = new ManualClock();
    const location = new ScriptedLocation(loc(1), clock, page.fails(new TypeError('a bug')));
    const { scheduler } = testScheduler({ locations: [location], clock });
    await scheduler.run(new AbortController().signal);
    expect(scheduler.status()[0]).toMatchObject({
      state: 'stopped',
      nextRunAt: null,
      stoppedBy: 'TYPEERROR',
    });
  });

  it('retries a stopped location with a backoff doubling from a minute, and it resumes once the error is gone', async () => {
    const clock = new ManualClock();
    const location = new ScriptedLocation(loc(1), clock);
    const { scheduler, metrics } = testScheduler({ locations: [location], clock });
    // The gauge as each page starts: set while the location is stopped, cleared by the page that goes through.
    const gaugeAtPage: Array<number | undefined> = [];
    const forbidden: PageStep = async () => {
      gaugeAtPage.push(await stoppedGauge(metrics, 'API_FORBIDDEN'));
      throw new FatalError('API_FORBIDDEN', 'no access');
    };
    location.then(forbidden, forbidden, forbidden, async () => {
      gaugeAtPage.push(await stoppedGauge(metrics, 'API_FORBIDDEN'));
      return { complete: true, published: 1 };
    });
    const run = started(scheduler);
    await driveUntil(scheduler, clock, () => location.totals.traversalsCompleted === 1, 'resumed');
    expect(location.runs.map((r) => r.at)).toEqual([0, 60_000, 180_000, 420_000]);
    expect(gaugeAtPage).toEqual([undefined, 1, 1, 1]);
    expect(scheduler.status()[0]?.stoppedBy).toBeNull();
    expect((await metrics.locationsStopped.get()).values).toEqual([]);
    await run.stop();
  });

  it('caps the stopped-location backoff and keeps run going while every location is stopped', async () => {
    const clock = new ManualClock();
    const location = new ScriptedLocation(loc(1), clock);
    location.otherwise = page.fails(new FatalError('CURSOR_LOOP', 'loop'));
    const { scheduler } = testScheduler({ locations: [location], clock });
    const run = started(scheduler);
    await driveUntil(scheduler, clock, () => location.runs.length >= 10, 'ten attempts');
    const at = location.runs.map((r) => r.at);
    const waits = at.slice(1, 10).map((t, i) => t - (at[i] ?? 0));
    expect(waits).toEqual([
      60_000, 120_000, 240_000, 480_000, 960_000, 1_920_000, 3_600_000, 3_600_000, 3_600_000,
    ]);
    let ended = false;
    void run.done.then(() => (ended = true));
    await settles(() => clock.pending > 0, 'the next retry set');
    expect(ended).toBe(false);
    await run.stop();
  });

  it('retries a location paused by a revoked grant every minute, without growing the wait', async () => {
    const clock = new ManualClock();
    const revoked = page.fails(new FatalError('AUTH_GRANT_REVOKED', 'run auth login'));
    const location = new ScriptedLocation(loc(1), clock, revoked, revoked, revoked, revoked);
    const { scheduler } = testScheduler({ locations: [location], clock });
    const run = started(scheduler);
    await driveUntil(scheduler, clock, () => location.totals.traversalsCompleted === 1, 'resumed');
    expect(location.runs.map((r) => r.at)).toEqual([0, 60_000, 120_000, 180_000, 240_000]);
    await run.stop();
  });

  it('keeps backing off a location whose cursor restarts keep failing: a restart in between is no progress', async () => {
    // Issue 20, point 6: a restarted page reset the failure count, so the retry after each
    // CURSOR_RESTARTS_EXHAUSTED came 1-250 ms later, cycle after cycle.
    const clock = new ManualClock(0, 0.999);
    const location = new ScriptedLocation(loc(1), clock);
    const exhausted = page.fails(new RetriableError('CURSOR_RESTARTS_EXHAUSTED', 'cursors rejected'));
    for (let i = 0; i < 4; i++) location.then(exhausted, page.restarted());
    const { scheduler } = testScheduler({
      locations: [location],
      clock,
      settings: {
        maxLocationsInFlight: 1,
        failureBackoff: { ...DEFAULT_RETRY_POLICY, initialDelayMs: 1_000, maxDelayMs: 60_000, multiplier: 2 },
      },
    });
    const run = started(scheduler);
    await driveUntil(scheduler, clock, () => location.runs.length >= 7, 'seven pages');
    await run.stop();
    const at = location.runs.map((r) => r.at);
    // Failures at pages 1, 3, 5: each retry waits longer than the one before (1 s, 2 s, 4 s ceilings).
    const waits = [1, 3, 5].map((i) => (at[i] ?? 0) - (at[i - 1] ?? 0));
    expect(waits[1]).toBeGreaterThan(waits[0] ?? 0);
    expect(waits[2]).toBeGreaterThan(waits[1] ?? 0);
    expect(waits[2]).toBeGreaterThanOrEqual(3_000);
  });

  it('keeps growing the stopped-location backoff when a cursor restart comes before each repeat of the error', async () => {
    // Issue 20, point 6: the restarted page counted as the location resuming, so its backoff stayed at a minute.
    const clock = new ManualClock(0, 0.999);
    const location = new ScriptedLocation(loc(1), clock);
    const refused = page.fails(new FatalError('API_BAD_REQUEST', 'the API refused the listing'));
    for (let i = 0; i < 4; i++) location.then(refused, page.restarted());
    const { scheduler } = testScheduler({
      locations: [location],
      clock,
      dynamic: true,
      settings: { maxLocationsInFlight: 1, failureBackoff: DEFAULT_RETRY_POLICY },
    });
    const run = started(scheduler);
    await driveUntil(scheduler, clock, () => location.runs.length >= 7, 'four failures');
    await run.stop();
    const failedAt = location.runs.filter((_, i) => i % 2 === 0).map((r) => r.at);
    const gaps = failedAt.slice(1).map((t, i) => t - (failedAt[i] ?? 0));
    expect(gaps[1]).toBeGreaterThan(gaps[0] ?? 0);
    expect(gaps[2]).toBeGreaterThan(gaps[1] ?? 0);
  });
});
