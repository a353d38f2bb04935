import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../support/clock.js';
import { loc, runFor, started, testScheduler } from '../../../support/sync/scheduler-harness.js';
import { ScriptedLocation } from '../../../support/sync/scripted-location.js';

/** Twenty quiet locations and five a delivery names, every page taking 1 s on the clock. */
function locations(clock: ManualClock) {
  const make = (n: number) => {
    const location = new ScriptedLocation(loc(n), clock);
    location.otherwise = async (run) => {
      await clock.sleep(1_000, run.signal);
      return { complete: true, published: 0 };
    };
    return location;
  };
  const quiet = Array.from({ length: 20 }, (_, i) => make(i + 1));
  const nudged = Array.from({ length: 5 }, (_, i) => make(100 + i));
  return { quiet, nudged };
}

/** When each location's first page started (infinite: none). */
const firstPollAt = (locations: readonly ScriptedLocation[]) =>
  locations.map((l) => l.runs[0]?.at ?? Number.POSITIVE_INFINITY);

const SETTINGS = { maxLocationsInFlight: 1, intervalMs: 15 * 60_000, nudgeShare: 0.25 };

describe('Scheduler: known changes first after a start or a takeover', () => {
  it('polls the nudged locations before the first traversals of the others at a start, which keep a bounded share', async () => {
    const clock = new ManualClock();
    const { quiet, nudged } = locations(clock);
    const { scheduler } = testScheduler({ locations: [...quiet, ...nudged], clock, settings: SETTINGS });
    for (const location of nudged) expect(scheduler.nudge(location.locationUid)).toBe('due_now');
    const run = started(scheduler);
    await runFor(clock, 30_000, 500);
    await run.stop();
    // One worker, a turn a second: every nudged location within the first seven turns, and two checks in them.
    expect(Math.max(...firstPollAt(nudged))).toBeLessThan(7_000);
    expect(firstPollAt(quiet).filter((at) => at < 7_000)).toHaveLength(2);
    // None starved: every first traversal done in the turns that followed.
    expect(Math.max(...firstPollAt(quiet))).toBeLessThan(30_000);
  });

  it('does the same for locations taken over at run time (distributed mode)', async () => {
    const clock = new ManualClock();
    const { quiet, nudged } = locations(clock);
    const { scheduler } = testScheduler({ locations: [], clock, dynamic: true, settings: SETTINGS });
    const run = started(scheduler);
    scheduler.add([...quiet, ...nudged]);
    for (const location of nudged) expect(scheduler.nudge(location.locationUid)).not.toBe('unknown');
    await runFor(clock, 30_000, 500);
    await run.stop();
    // The worker took a first traversal as the locations came, before any nudge: then as at a start.
    expect(Math.max(...firstPollAt(nudged))).toBeLessThan(8_000);
    expect(firstPollAt(quiet).filter((at) => at < 8_000)).toHaveLength(3);
    expect(Math.max(...firstPollAt(quiet))).toBeLessThan(30_000);
  });
});
