/**
 * The backfill queue: split locations (lanes.ts) whose history lane waits for a turn, in the order they joined
 * (FIFO), the history turns running, and the history pages read in the background.
 *
 * A split location joins once its live traversal completes, and again after each history turn while it has
 * history left. A history turn is given only to a location whose next history page is ready (read ahead:
 * listed and its single calls made), so the turn holds the location for a commit, not for the listing and
 * single calls of a page, which the location's own live poll would wait for (so live stays fresh under a
 * low rate limit). A location whose page is not read yet starts reading it (`prefetchHistory`) and leaves the
 * queue until it is ready, then joins again; at most `maxPrefetching` read at a time, so the pages held in
 * memory stay bounded. A location whose rate-limit scope is held (`heldUntil`) stays in the queue without reading
 * or taking a turn: its requests would only wait, holding a worker or a read-ahead place; the owner is told
 * (`heldSkipped`) so it looks again at the hold's end, whatever else happens meanwhile. How many
 * history turns may run at once is the turn policy's (turn-rule.ts).
 */
import type { Slot } from './scheduled-location.js';

/** What the queue reads of a slot; its own bookkeeping (queued, awaiting a page) it keeps itself. */
export type BackfillSlot = Pick<Slot, 'location' | 'state' | 'detached' | 'pageSignal'>;

export interface BackfillQueueOptions<S> {
  /** History pages read in the background at most at a time (poll.maxLocationsInFlight). */
  maxPrefetching: number;
  /** A page read in the background is ready: its location is back in the queue. */
  onReady: () => void;
  /** When the slot's rate-limit scope's hold ends, if it is held now; null (or not given): not held. */
  heldUntil?: (slot: S) => number | null;
  /** A slot was skipped because its scope is held until `until`: the owner looks again then. */
  heldSkipped?: (until: number) => void;
}

export class BackfillQueue<S extends BackfillSlot> {
  private readonly queue: S[] = [];
  /** The slots in `queue`, so a slot joins once. */
  private readonly queued = new Set<S>();
  /** Slots out of the queue while their next history page is read in the background (counted once). */
  private readonly awaiting = new Set<S>();
  /** History turns running now (take() to turnEnded()). */
  private running = 0;
  /** Slots out of the queue while their next history page is read in the background. */
  private prefetching = 0;

  constructor(private readonly options: BackfillQueueOptions<S>) {}

  /** Whether `slot` is in the queue (its history lane waits for a turn). */
  isQueued(slot: S): boolean {
    return this.queued.has(slot);
  }

  /** Whether `slot` is out of the queue while its next history page is read in the background. */
  isAwaitingPage(slot: S): boolean {
    return this.awaiting.has(slot);
  }

  /** History turns running now. */
  get historyTurns(): number {
    return this.running;
  }

  /** Puts a split location with history left in the queue (once; not a location gone). */
  enqueue(slot: S): void {
    if (this.queued.has(slot) || slot.detached || slot.location.hasHistory !== true) return;
    this.queued.add(slot);
    this.queue.push(slot);
  }

  /**
   * The first slot whose next history page is ready for a history turn (or could not be read ahead: the turn
   * reads it itself); none: undefined. Slots that cannot backfill now (running, gone, history merged) leave
   * the queue; a slot whose page is not read yet starts reading it, see the module comment.
   */
  next(): S | undefined {
    let i = 0;
    while (i < this.queue.length) {
      const slot = this.queue[i] as S;
      const { location } = slot;
      if (slot.detached || slot.state !== 'waiting' || location.hasHistory !== true) {
        this.leave(i);
        continue;
      }
      const heldUntil = this.options.heldUntil?.(slot) ?? null;
      if (heldUntil !== null) {
        this.options.heldSkipped?.(heldUntil);
        i += 1;
        continue;
      }
      let ahead = location.historyAhead();
      if (ahead.state === 'none') {
        if (this.prefetching >= this.options.maxPrefetching) {
          i += 1;
          continue;
        }
        location.prefetchHistory(slot.pageSignal);
        ahead = location.historyAhead();
      }
      if (ahead.state !== 'pending') return slot;
      this.leave(i);
      // Once per page: a slot queued again meanwhile (its live traversal completed) must not count twice.
      if (this.awaiting.has(slot)) continue;
      this.awaiting.add(slot);
      this.prefetching += 1;
      void ahead.settled.then(() => {
        this.awaiting.delete(slot);
        this.prefetching -= 1;
        this.enqueue(slot);
        this.options.onReady();
      });
    }
    return undefined;
  }

  /** Takes the slot next() gives out of the queue for a history turn (counted until turnEnded). */
  take(): S | undefined {
    const slot = this.next();
    if (slot === undefined) return undefined;
    this.running += 1;
    this.leave(this.queue.indexOf(slot));
    return slot;
  }

  /** A history turn taken ended (or was never started). */
  turnEnded(): void {
    this.running -= 1;
  }

  /** Whether no history waits, runs or is being read (no side effect, unlike drained()). */
  idle(): boolean {
    return this.queue.length === 0 && this.running === 0 && this.prefetching === 0;
  }

  /**
   * Whether no history is left to run now or later: none ready (next(), which may start reading pages ahead)
   * and none being read.
   */
  drained(): boolean {
    return this.next() === undefined && this.prefetching === 0;
  }

  private leave(index: number): void {
    const [slot] = this.queue.splice(index, 1);
    if (slot !== undefined) this.queued.delete(slot);
  }
}
