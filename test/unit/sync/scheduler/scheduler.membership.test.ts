import { describe, expect, it } from 'vitest';
import { deferred, settles } from '../../../support/async.js';
import { ManualClock } from '../../../support/clock.js';
import {
  driveUntil,
  eventLoopTurns,
  loc,
  started,
  testScheduler,
} from '../../../support/sync/scheduler-harness.js';
import { page, ScriptedLocation } from '../../../support/sync/scripted-location.js';

describe('Scheduler membership (distributed mode)', () => {
  it('runs with no location until stopped, and polls the locations added while it runs', async () => {
    const clock = new ManualClock();
    const { scheduler } = testScheduler({ locations: [], clock, dynamic: true });
    const run = started(scheduler);
    let ended = false;
    void run.done.then(() => (ended = true));
    await eventLoopTurns();
    expect(ended).toBe(false);
    const added = [1, 2].map((n) => new ScriptedLocation(loc(n), clock, page.more()));
    scheduler.add(added);
    await settles(() => added.every((l) => l.totals.traversalsCompleted === 1), 'both added traversed');
    expect(scheduler.status().map((s) => s.locationUid)).toEqual([loc(1), loc(2)]);
    await run.stop();
  });

  it('refuses to add a location that is already scheduled', () => {
    const clock = new ManualClock();
    const { scheduler } = testScheduler({
      locations: [new ScriptedLocation(loc(1), clock)],
      clock,
      dynamic: true,
    });
    expect(() => scheduler.add([new ScriptedLocation(loc(1), clock)])).toThrow(RangeError);
    expect(() =>
      scheduler.add([new ScriptedLocation(loc(2), clock), new ScriptedLocation(loc(2), clock)]),
    ).toThrow(RangeError);
    expect(scheduler.status().map((s) => s.locationUid)).toEqual([loc(1)]);
  });

  it('lets a removed location finish its page in flight, then starts no page of it while the others go on', async () => {
    const clock = new ManualClock();
    const release = deferred();
    const leaving = new ScriptedLocation(loc(1), clock, page.heldUntil(release.promise));
    const staying = new ScriptedLocation(loc(2), clock);
    const { scheduler } = testScheduler({
      locations: [leaving, staying],
      clock,
      dynamic: true,
      settings: { intervalMs: 10 },
    });
    const run = started(scheduler);
    await settles(() => leaving.runs.length === 1, 'the page in flight');
    let removed = false;
    const removal = scheduler.remove([loc(1)], 60_000).then(() => (removed = true));
    await driveUntil(scheduler, clock, () => staying.runs.length >= 3, 'the other location polled');
    expect(removed).toBe(false);
    expect(leaving.runs[0]?.signal?.aborted).toBe(false);
    release.resolve();
    await removal;
    // The page in flight went through; the location is gone from the status, and no page of it starts.
    expect(leaving.totals.pages).toBe(1);
    expect(scheduler.status().map((s) => s.locationUid)).toEqual([loc(2)]);
    const before = staying.runs.length;
    await driveUntil(
      scheduler,
      clock,
      () => staying.runs.length > before + 2,
      'the other location polled on',
    );
    expect(leaving.runs).toHaveLength(1);
    await run.stop();
  });

  it("aborts a removed location's page signal once its page is over, cancelling the read-ahead that page started", async () => {
    // The read-ahead a location's last page starts (listing and single calls) runs on its page signal.
    const clock = new ManualClock();
    const release = deferred();
    const inFlight = new ScriptedLocation(loc(1), clock, page.heldUntil(release.promise));
    const between = new ScriptedLocation(loc(2), clock, page.complete());
    const { scheduler } = testScheduler({ locations: [inFlight, between], clock, dynamic: true });
    const run = started(scheduler);
    await settles(() => inFlight.runs.length === 1 && between.totals.pages === 1, 'both paged');
    // Between pages: it leaves at once, and its signal aborts.
    await scheduler.remove([loc(2)], 60_000);
    expect(between.runs[0]?.signal?.aborted).toBe(true);
    // In the middle of a page: the signal aborts only once the page is over (it was not cut short).
    const removal = scheduler.remove([loc(1)], 60_000);
    release.resolve();
    await removal;
    expect(inFlight.totals.pages).toBe(1);
    expect(inFlight.runs[0]?.signal?.aborted).toBe(true);
    await run.stop();
  });

  it('aborts the page of a removed location still in flight after the bound, on the injected clock', async () => {
    const clock = new ManualClock();
    const location = new ScriptedLocation(loc(1), clock, page.heldUntil(new Promise<void>(() => undefined)));
    const { scheduler } = testScheduler({ locations: [location], clock, dynamic: true });
    const run = started(scheduler);
    await settles(() => location.runs.length === 1, 'the page in flight');
    const removal = scheduler.remove([loc(1)], 5_000);
    await clock.sleepingFor(5_000);
    clock.advance(4_999);
    await eventLoopTurns();
    expect(location.runs[0]?.signal?.aborted).toBe(false);
    clock.advance(1);
    await removal;
    expect(location.runs[0]?.signal?.aborted).toBe(true);
    expect(location.totals.pages).toBe(0);
    expect(scheduler.status()).toEqual([]);
    await run.stop();
  });
});
