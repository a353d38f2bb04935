import { describe, expect, it } from 'vitest';
import type { ConnectorMetrics } from '../../../../src/metrics/metrics.js';
import { ManualClock } from '../../../support/clock.js';
import { driveUntil, runFor, loc, started, testScheduler } from '../../../support/sync/scheduler-harness.js';
import { ScriptedLocation } from '../../../support/sync/scripted-location.js';

/** The effective interval gauge (s). */
async function effectiveSeconds(metrics: ConnectorMetrics): Promise<number | undefined> {
  const metric = metrics.registry.getSingleMetric('calls_connector_poll_effective_interval_seconds');
  return (await metric?.get())?.values[0]?.value;
}

describe('Scheduler stretch: the controller measures what it rations', () => {
  it("polls every other location at the configured interval while one location's live traversal takes 80 s", async () => {
    const clock = new ManualClock();
    const INTERVAL = 500;
    // Seven quiet locations, and one whose third poll re-reads a large same-instant group for 80 s.
    const quiet = [2, 3, 4, 5, 6, 7, 8].map((n) => new ScriptedLocation(loc(n), clock));
    const slow = new ScriptedLocation(loc(1), clock);
    let slowPolls = 0;
    slow.otherwise = async (run) => {
      slowPolls += 1;
      if (slowPolls === 3) await clock.sleep(80_000, run.signal);
      return { complete: true, published: 260 };
    };
    const { scheduler, metrics } = testScheduler({
      locations: [slow, ...quiet],
      clock,
      settings: { maxLocationsInFlight: 4, intervalMs: INTERVAL },
    });
    const run = started(scheduler);
    await driveUntil(
      scheduler,
      clock,
      () => slowPolls >= 4 && clock.now() >= 100_000,
      'the slow traversal over and 20 s more',
      5_000,
    );
    expect(await effectiveSeconds(metrics)).toBe(INTERVAL / 1000);
    for (const location of quiet) {
      const at = location.runsOf('live').map((r) => r.at);
      expect(at.length).toBeGreaterThan(190);
      const gaps = new Set(at.slice(2).map((t, i) => t - (at[i + 1] ?? 0)));
      expect([...gaps]).toEqual([INTERVAL]);
    }
    await run.stop();
  });

  it('returns to the configured interval within a few intervals of the cause going away, without waiting for the stretched polls', async () => {
    const clock = new ManualClock();
    const INTERVAL = 1_000;
    // Two workers, four locations whose live pages take 5 s each (the workers are the bound), one split with
    // history ready (pages of 0.1 s), so live may take only its share of the workers.
    let slowUntil = 30_000;
    const locations = [1, 2, 3, 4].map((n) => {
      const location = new ScriptedLocation(loc(n), clock);
      location.otherwise = async (run) => {
        if (run.lane === 'history') await clock.sleep(100, run.signal);
        else if (clock.now() < slowUntil) await clock.sleep(5_000, run.signal);
        return { complete: run.lane === 'live', published: 1 };
      };
      return location;
    });
    const split = locations[0] as ScriptedLocation;
    split.hasHistory = true;
    split.ahead = { state: 'ready' };
    const { scheduler, metrics } = testScheduler({
      locations,
      clock,
      settings: { maxLocationsInFlight: 2, intervalMs: INTERVAL },
    });
    const run = started(scheduler);
    await runFor(clock, 30_000, 100);
    expect(await effectiveSeconds(metrics)).toBeGreaterThan(INTERVAL / 1000);
    // The cause goes away: pages starting from now on are quick. The last slow ones end by 35 s.
    slowUntil = 0;
    await runFor(clock, 5_000, 100);
    const causeGone = clock.now();
    await runFor(clock, 5 * INTERVAL, 100);
    expect(await effectiveSeconds(metrics)).toBe(INTERVAL / 1000);
    // Every location polled (again) within the few intervals that followed.
    for (const location of locations)
      expect(location.runsOf('live').filter((r) => r.at > causeGone).length).toBeGreaterThanOrEqual(2);
    await run.stop();
  });
});
