import { describe, expect, it } from 'vitest';
import { BackfillQueue, type BackfillSlot } from '../../../../src/sync/scheduler/backfill-queue.js';
import { deferred, settles } from '../../../support/async.js';
import { ManualClock } from '../../../support/clock.js';
import { loc } from '../../../support/sync/scheduler-harness.js';
import { ScriptedLocation } from '../../../support/sync/scripted-location.js';

type TestSlot = BackfillSlot & { location: ScriptedLocation };

/** A waiting slot of a split location whose next history page is `ahead` ('ready' unless said). */
function slot(n: number, ahead: ScriptedLocation['ahead'] = { state: 'ready' }): TestSlot {
  const location = new ScriptedLocation(loc(n), new ManualClock());
  location.hasHistory = true;
  location.ahead = ahead;
  return {
    location,
    state: 'waiting',
    pageSignal: new AbortController().signal,
  };
}

/** Slots whose location is no longer scheduled (membership.ts). */
const goneSlots = new WeakSet<TestSlot>();

function backfillQueue(maxPrefetching = 2) {
  let ready = 0;
  const queue = new BackfillQueue<TestSlot>({
    maxPrefetching,
    onReady: () => (ready += 1),
    gone: (s) => goneSlots.has(s),
  });
  return { queue, ready: () => ready };
}

/** As the scheduler asks: the queue moved on (pump), then the slot ready for a turn. */
function next(queue: BackfillQueue<TestSlot>): TestSlot | undefined {
  queue.pump();
  return queue.ready();
}

/** As the scheduler takes a history turn: the queue moved on, then the ready slot taken. */
function takeTurn(queue: BackfillQueue<TestSlot>): TestSlot | undefined {
  queue.pump();
  return queue.take();
}

/** Reading a history page ahead, as LocationSync does: pending until the test settles it. */
function readsAhead(s: TestSlot) {
  const read = deferred();
  s.location.ahead = { state: 'none' };
  s.location.onPrefetch = () => (s.location.ahead = { state: 'pending', settled: read.promise });
  return {
    done: () => {
      s.location.ahead = { state: 'ready' };
      read.resolve();
    },
  };
}

describe('BackfillQueue', () => {
  it('gives history turns in the order locations joined, each location once', () => {
    const { queue } = backfillQueue();
    const [a, b] = [slot(1), slot(2)];
    queue.enqueue(a);
    queue.enqueue(b);
    queue.enqueue(a);
    expect(takeTurn(queue)).toBe(a);
    expect(takeTurn(queue)).toBe(b);
    expect(takeTurn(queue)).toBeUndefined();
    expect(queue.isQueued(a)).toBe(false);
  });

  it('counts the history turns taken until they end', () => {
    const { queue } = backfillQueue();
    queue.enqueue(slot(1));
    queue.enqueue(slot(2));
    takeTurn(queue);
    takeTurn(queue);
    expect(queue.historyTurns).toBe(2);
    queue.turnEnded();
    expect(queue.historyTurns).toBe(1);
  });

  it('takes no location that has no history left, is gone or is running, and drops it from the queue', () => {
    const { queue } = backfillQueue();
    const notSplit = slot(1);
    notSplit.location.hasHistory = false;
    queue.enqueue(notSplit);
    expect(queue.isQueued(notSplit)).toBe(false);
    const [merged, gone, running] = [slot(2), slot(3), slot(4)];
    for (const s of [merged, gone, running]) queue.enqueue(s);
    merged.location.hasHistory = false;
    goneSlots.add(gone);
    running.state = 'running';
    expect(next(queue)).toBeUndefined();
    expect([merged, gone, running].map((s) => queue.isQueued(s))).toEqual([false, false, false]);
    expect(queue.drained()).toBe(true);
  });

  it('starts reading the next history page of a location under its page signal, and takes it once ready', async () => {
    const { queue, ready } = backfillQueue();
    const a = slot(1);
    const read = readsAhead(a);
    queue.enqueue(a);
    expect(takeTurn(queue)).toBeUndefined();
    expect(a.location.prefetches).toEqual([a.pageSignal]);
    expect([queue.isQueued(a), queue.isAwaitingPage(a)]).toEqual([false, true]);
    expect(queue.drained()).toBe(false);
    read.done();
    await settles(() => ready() === 1, 'the page read');
    expect([queue.isQueued(a), queue.isAwaitingPage(a)]).toEqual([true, false]);
    expect(takeTurn(queue)).toBe(a);
    expect(a.location.prefetches).toHaveLength(1);
  });

  it('reads at most maxPrefetching pages ahead at a time, the others waiting their turn in the queue', async () => {
    const { queue, ready } = backfillQueue(1);
    const [a, b] = [slot(1), slot(2)];
    const [readA] = [readsAhead(a), readsAhead(b)];
    queue.enqueue(a);
    queue.enqueue(b);
    expect(next(queue)).toBeUndefined();
    expect(a.location.prefetches).toHaveLength(1);
    expect(b.location.prefetches).toHaveLength(0);
    expect(queue.isQueued(b)).toBe(true);
    readA.done();
    await settles(() => ready() === 1, "a's page read");
    expect(takeTurn(queue)).toBe(a);
    expect(next(queue)).toBeUndefined();
    expect(b.location.prefetches).toHaveLength(1);
  });

  it('counts a page being read once when its location joins the queue again meanwhile', () => {
    const { queue } = backfillQueue(2);
    const [a, b] = [slot(1), slot(2)];
    readsAhead(a);
    readsAhead(b);
    queue.enqueue(a);
    expect(next(queue)).toBeUndefined();
    // Its live traversal completed meanwhile: it joins again, and is found still being read.
    queue.enqueue(a);
    expect(next(queue)).toBeUndefined();
    // One page is being read, not two: b may start reading its own.
    queue.enqueue(b);
    expect(next(queue)).toBeUndefined();
    expect(b.location.prefetches).toHaveLength(1);
  });

  it('gives a turn to a location whose page could not be read ahead: the turn reads it itself', () => {
    const { queue } = backfillQueue();
    const a = slot(1, { state: 'none' });
    queue.enqueue(a);
    expect(takeTurn(queue)).toBe(a);
    expect(a.location.prefetches).toHaveLength(1);
  });

  it('answers ready and drained without starting anything: only pump reads pages ahead', () => {
    const { queue } = backfillQueue();
    const a = slot(1);
    readsAhead(a);
    queue.enqueue(a);
    expect(queue.ready()).toBeUndefined();
    expect(queue.drained()).toBe(false);
    expect(queue.take()).toBeUndefined();
    expect(a.location.prefetches).toHaveLength(0);
    queue.pump();
    expect(a.location.prefetches).toHaveLength(1);
  });

  it("leaves a held location in the queue without reading ahead, and tells the owner the hold's end", () => {
    const skipped: number[] = [];
    let heldUntil: number | null = 7_000;
    const queue = new BackfillQueue<TestSlot>({
      maxPrefetching: 2,
      onReady: () => undefined,
      heldUntil: () => heldUntil,
      heldSkipped: (until) => skipped.push(until),
    });
    const s = slot(1, { state: 'none' });
    queue.enqueue(s);
    expect(next(queue)).toBeUndefined();
    expect(skipped).toEqual([7_000]);
    expect(s.location.prefetches).toHaveLength(0);
    expect(queue.drained()).toBe(true);
    heldUntil = null;
    expect(queue.drained()).toBe(false);
    next(queue);
    expect(s.location.prefetches).toHaveLength(1);
  });
});
