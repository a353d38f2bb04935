import { describe, expect, it } from 'vitest';
import { RetriableError } from '../../../../src/errors/index.js';
import type { RateLimitScopes } from '../../../../src/sync/ports.js';
import { deferred, settles } from '../../../support/async.js';
import { ManualClock } from '../../../support/clock.js';
import { eventLoopTurns, loc, started, testScheduler } from '../../../support/sync/scheduler-harness.js';
import { ScriptedLocation } from '../../../support/sync/scripted-location.js';

const INTERVAL = 15 * 60_000;

/** One grant `G`, held until `hold.until` while the clock is before it. */
function heldGrant(clock: ManualClock): { scopes: RateLimitScopes; hold: { until: number } } {
  const hold = { until: Number.NEGATIVE_INFINITY };
  return {
    hold,
    scopes: {
      scopeOf: () => 'G',
      heldUntil: () => (clock.now() < hold.until ? hold.until : null),
      ratePerSecond: () => null,
    },
  };
}

describe('Scheduler and grant holds: history resumes at the hold end', () => {
  it("runs a split location's next history page at the end of a short hold, not at its next live poll", async () => {
    const clock = new ManualClock();
    const { scopes, hold } = heldGrant(clock);
    const readAhead = deferred();
    const location = new ScriptedLocation(loc(1), clock);
    location.hasHistory = true;
    location.ahead = { state: 'ready' };
    let historyEndedAt = Number.NaN;
    location.otherwise = (run) => {
      if (run.lane === 'live') return { complete: true, published: 1 };
      if (location.runsOf('history').length === 1) {
        // The commit starts reading the next page, and a plain 429 holds the grant for 1 s meanwhile.
        location.ahead = { state: 'pending', settled: readAhead.promise };
        hold.until = clock.now() + 1_000;
        historyEndedAt = clock.now();
        return { complete: false, published: 1 };
      }
      location.hasHistory = false;
      return { complete: true, published: 1 };
    };
    const { scheduler } = testScheduler({
      locations: [location],
      clock,
      scopes,
      settings: { maxLocationsInFlight: 1, intervalMs: INTERVAL },
    });
    const run = started(scheduler);
    await settles(() => location.runsOf('history').length === 1, 'the first history page');
    await eventLoopTurns();
    clock.advance(500);
    location.ahead = { state: 'ready' };
    readAhead.resolve();
    await eventLoopTurns();
    clock.advance(1_000);
    await eventLoopTurns();
    await settles(() => location.runsOf('history').length >= 2, 'the next history page').catch(
      () => undefined,
    );
    const next = location.runsOf('history')[1]?.at ?? Number.POSITIVE_INFINITY;
    expect(next - historyEndedAt).toBeLessThanOrEqual(2_000);
    await run.stop();
  });

  it('does not count a history page refused by the parked grant as a failure when its turn comes after the hold', async () => {
    const clock = new ManualClock();
    const { scopes } = heldGrant(clock);
    const location = new ScriptedLocation(loc(1), clock);
    location.hasHistory = true;
    location.ahead = { state: 'ready' };
    location.otherwise = (run) => {
      if (run.lane === 'live') return { complete: true, published: 1 };
      // Read ahead while the grant was parked; the hold is over by the turn that takes it.
      if (location.runsOf('history').length === 1)
        return Promise.reject(new RetriableError('API_SCOPE_THROTTLED', 'the scope is parked'));
      location.hasHistory = false;
      return { complete: true, published: 1 };
    };
    const { scheduler } = testScheduler({
      locations: [location],
      clock,
      scopes,
      settings: { maxLocationsInFlight: 1, intervalMs: INTERVAL },
    });
    const run = started(scheduler);
    await settles(() => location.runsOf('history').length >= 1, 'the refused history page');
    await eventLoopTurns();
    expect(scheduler.status()[0]).toMatchObject({ consecutiveFailures: 0, lastError: null });
    // Due again at once, not after a failure backoff: the history page runs without the clock moving.
    await settles(() => location.runsOf('history').length >= 2, 'the history page again');
    await run.stop();
  });
});
