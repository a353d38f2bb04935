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
import { ScriptedLocation } from '../../../support/sync/scripted-location.js';

/**
 * A split location (lanes.ts) whose history page is always read ahead: each live page completes its traversal;
 * `history` plays each history page (the n-th, from 1). After `historyPages` pages the lanes merge.
 */
function splitLocation(
  uid: string,
  clock: ManualClock,
  historyPages: number,
  history: (n: number) => void | Promise<void> = () => undefined,
): ScriptedLocation {
  const location = new ScriptedLocation(uid, clock);
  location.hasHistory = true;
  location.ahead = { state: 'ready' };
  let n = 0;
  location.otherwise = async (run) => {
    if (run.lane === 'live') return { complete: true, published: 1 };
    n += 1;
    await history(n);
    if (n < historyPages) return { complete: false, published: 2 };
    location.hasHistory = false;
    return { complete: true, published: 2 };
  };
  return location;
}

/** The due time of `uid` in the scheduler's status. */
function dueAt(
  scheduler: { status(): Array<{ locationUid: string; nextRunAt: number | null }> },
  uid: string,
) {
  return scheduler.status().find((s) => s.locationUid === uid)?.nextRunAt ?? Number.NaN;
}

describe('Scheduler with lanes', () => {
  it("runs due live work first, history in the slot it leaves, and ends a history turn when another location's live poll falls due", async () => {
    const clock = new ManualClock();
    // loc(1)'s phase comes before loc(2)'s: moving to loc(1)'s due time makes only its live lane due.
    const journal: string[] = [];
    const split = splitLocation(loc(2), clock, 8, (n) => {
      if (n === 4) clock.advance(dueAt(scheduler, loc(1)) - clock.now());
    });
    const other = new ScriptedLocation(loc(1), clock);
    split.journal = journal;
    other.journal = journal;
    const { scheduler } = testScheduler({
      locations: [split, other],
      clock,
      settings: { maxLocationsInFlight: 1, pagesPerTurn: 100 },
    });
    const run = started(scheduler);
    await settles(() => !split.hasHistory, 'history merged');
    await run.stop();
    // The split location's live lane, the other's live poll, and only then history.
    expect(journal.slice(0, 3)).toEqual(['2:live', '1:live', '2:history']);
    // The other location fell due during the 4th history page: polled right after it, then history goes on.
    expect(journal.slice(2)).toEqual([
      ...Array<string>(4).fill('2:history'),
      '1:live',
      ...Array<string>(4).fill('2:history'),
    ]);
  });

  it('ends a history turn when the location’s own live lane falls due', async () => {
    const clock = new ManualClock();
    const journal: string[] = [];
    const split = splitLocation(loc(2), clock, 4, (n) => {
      // Its live lane is due within an interval of its traversal's end (the slot shows no due time while it runs).
      if (n === 2) clock.advance(60_000);
    });
    split.journal = journal;
    const { scheduler } = testScheduler({ locations: [split], clock, settings: { pagesPerTurn: 100 } });
    const run = started(scheduler);
    await settles(() => !split.hasHistory, 'history merged');
    await run.stop();
    expect(journal).toEqual(['2:live', '2:history', '2:history', '2:live', '2:history', '2:history']);
  });
});

describe('Scheduler with lanes: history pages read in the background', () => {
  it("gives no history turn until the location's next history page is read, and polls its live lane meanwhile", async () => {
    const clock = new ManualClock();
    const split = splitLocation(loc(1), clock, 1);
    split.ahead = { state: 'none' };
    const read = deferred();
    split.onPrefetch = () => (split.ahead = { state: 'pending', settled: read.promise });
    const { scheduler } = testScheduler({ locations: [split], clock, settings: { pagesPerTurn: 10 } });
    const run = started(scheduler);
    await settles(() => split.prefetches.length === 1 && clock.pending > 0, 'the history page being read');
    // Read under the location's page signal (a stop or a removal cancels it), and no history turn yet.
    expect(split.prefetches[0]).toBe(split.runs[0]?.signal);
    expect(split.runsOf('history')).toEqual([]);
    await driveUntil(scheduler, clock, () => split.runsOf('live').length === 2, 'the next live poll');
    expect(split.runsOf('history')).toEqual([]);
    split.ahead = { state: 'ready' };
    read.resolve();
    await settles(() => !split.hasHistory, 'history merged');
    expect(split.runs.map((r) => r.lane)).toEqual(['live', 'live', 'history']);
    expect(split.prefetches).toHaveLength(1);
    await run.stop();
  });

  it('ends a history turn when its next page is still being read, and gives the next one once it is ready', async () => {
    const clock = new ManualClock();
    let read = deferred();
    // Each history page's commit starts reading the next one (as LocationSync's does).
    const split = splitLocation(loc(1), clock, 3, () => {
      read = deferred();
      split.ahead = { state: 'pending', settled: read.promise };
    });
    const { scheduler } = testScheduler({ locations: [split], clock, settings: { pagesPerTurn: 10 } });
    const run = started(scheduler);
    for (let page = 1; page <= 2; page++) {
      await settles(() => split.runsOf('history').length === page, `history page ${page}`);
      await eventLoopTurns();
      expect(split.runsOf('history')).toHaveLength(page);
      split.ahead = { state: 'ready' };
      read.resolve();
    }
    await settles(() => !split.hasHistory, 'history merged');
    expect(split.runs.map((r) => r.lane)).toEqual(['live', 'history', 'history', 'history']);
    await run.stop();
  });
  it('ends a history turn whose cursor was rejected, and reads the restarted page in the background, not in the turn', async () => {
    // Chaos seed 402924: the turn read the restarted page itself (a same-instant group through, and its single
    // calls, at backfill priority), and the location's own live poll waited 47 s behind it.
    const clock = new ManualClock();
    const split = splitLocation(loc(1), clock, 2, (n) => {
      // The first history page's read-ahead met a rejected cursor: the lane restarted from its watermark, and
      // nothing is read ahead from there.
      if (n === 1) split.ahead = { state: 'none' };
    });
    const read = deferred();
    split.onPrefetch = () => (split.ahead = { state: 'pending', settled: read.promise });
    const { scheduler } = testScheduler({ locations: [split], clock, settings: { pagesPerTurn: 10 } });
    const run = started(scheduler);
    await settles(() => split.prefetches.length === 1, 'the restarted page being read');
    expect(split.runsOf('history')).toHaveLength(1);
    // Meanwhile its live lane is polled at its interval.
    await driveUntil(scheduler, clock, () => split.runsOf('live').length === 2, 'the next live poll');
    expect(split.runsOf('history')).toHaveLength(1);
    split.ahead = { state: 'ready' };
    read.resolve();
    await settles(() => !split.hasHistory, 'history merged');
    expect(split.runs.map((r) => r.lane)).toEqual(['live', 'history', 'live', 'history']);
    await run.stop();
  });
});

describe('Scheduler history slots', () => {
  it('runs history turns in at most half the slots, so live work always finds a worker', async () => {
    const clock = new ManualClock();
    const gate = deferred();
    let historyNow = 0;
    let mostHistory = 0;
    const held = async () => {
      historyNow += 1;
      mostHistory = Math.max(mostHistory, historyNow);
      await gate.promise;
      historyNow -= 1;
    };
    const locations = [1, 2, 3, 4].map((n) => splitLocation(loc(n), clock, 3, held));
    const { scheduler } = testScheduler({
      locations,
      clock,
      settings: { maxLocationsInFlight: 4, pagesPerTurn: 3 },
    });
    const run = started(scheduler);
    await settles(() => historyNow === 2 && clock.pending > 0, 'two history turns held');
    await eventLoopTurns();
    expect(historyNow).toBe(2);
    // Live work falling due while both history pages are held finds a free worker.
    const lives = () => locations.reduce((sum, l) => sum + l.runsOf('live').length, 0);
    await driveUntil(scheduler, clock, () => lives() === 5, 'a live poll beside the history turns');
    expect(historyNow).toBe(2);
    gate.resolve();
    await driveUntil(scheduler, clock, () => locations.every((l) => !l.hasHistory), 'all merged');
    await run.stop();
    expect(mostHistory).toBe(2);
  });
});
