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
 * memory stay bounded. Starting those reads is the one command, `pump`; `ready`, `drained` and the counts are
 * queries that start nothing. A location whose rate-limit scope is held (`heldUntil`) stays in the queue without reading
 * or taking a turn: its requests would only wait, holding a worker or a read-ahead place; the owner is told
 * (`heldSkipped`) so it looks again at the hold's end, whatever else happens meanwhile. How many
 * history turns may run at once is the turn policy's (turn-rule.ts).
 */
import type { Slot } from './scheduled-location.js';

/** What the queue reads of a slot; its own bookkeeping (queued, awaiting a page) it keeps itself. */
export type BackfillSlot = Pick<Slot, 'location' | 'state' | 'pageSignal'>;

export interface BackfillQueueOptions<S> {
  /** History pages read in the background at most at a time (poll.maxLocationsInFlight). */
  maxPrefetching: number;
  /** A page read in the background is ready: its location is back in the queue. */
  onReady: () => void;
  /** When the slot's rate-limit scope's hold ends, if it is held now; null (or not given): not held. */
  heldUntil?: (slot: S) => number | null;
  /** A slot was skipped because its scope is held until `until`: the owner looks again then. */
  heldSkipped?: (until: number) => void;
  /** Whether the slot's location is no longer scheduled (membership.ts); none is when not given. */
  gone?: (slot: S) => boolean;
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
  /** Queued slots whose page could not be read ahead: their turn reads it (pump found them, ready() gives them). */
  private readonly turnReads = new Set<S>();

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
    if (this.queued.has(slot) || this.isGone(slot) || slot.location.hasHistory !== true) return;
    this.queued.add(slot);
    this.queue.push(slot);
  }

  /**
   * Moves the queue on (the one command that starts work): slots that cannot backfill now (running, gone, history
   * merged) leave it; a slot whose page is not read yet starts reading it, within `maxPrefetching`, and leaves
   * the queue until it is ready (see the module comment); a held slot stays, its hold's end told to the owner.
   * Call it before asking `ready()`.
   */
  pump(): void {
    let i = 0;
    while (i < this.queue.length) {
      const slot = this.queue[i] as S;
      const { location } = slot;
      if (!this.eligible(slot)) {
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
      if (ahead.state === 'none' && !this.turnReads.has(slot)) {
        if (this.prefetching >= this.options.maxPrefetching) {
          i += 1;
          continue;
        }
        location.prefetchHistory(slot.pageSignal);
        ahead = location.historyAhead();
        // Not read ahead (the location could not start it): its turn reads the page itself.
        if (ahead.state === 'none') this.turnReads.add(slot);
      }
      if (ahead.state !== 'pending') {
        i += 1;
        continue;
      }
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
  }

  /**
   * The first slot in the queue ready for a history turn: its next history page read ahead (or not readable
   * ahead: the turn reads it itself), its scope not held; none: undefined. A query: it starts nothing (`pump`).
   */
  ready(): S | undefined {
    return this.queue.find(
      (slot) =>
        this.eligible(slot) &&
        (this.options.heldUntil?.(slot) ?? null) === null &&
        (slot.location.historyAhead().state === 'ready' || this.turnReads.has(slot)),
    );
  }

  /** Takes the slot ready() gives out of the queue for a history turn (counted until turnEnded). */
  take(): S | undefined {
    const slot = this.ready();
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
   * Whether no history is left to run now or later: none being read, and none in the queue that could backfill
   * (a held one waits for its hold's end). A query.
   */
  drained(): boolean {
    return (
      this.prefetching === 0 &&
      !this.queue.some((slot) => this.eligible(slot) && (this.options.heldUntil?.(slot) ?? null) === null)
    );
  }

  /** Whether a queued slot can backfill: not gone, not running, history left. */
  private eligible(slot: S): boolean {
    return !this.isGone(slot) && slot.state === 'waiting' && slot.location.hasHistory === true;
  }

  private isGone(slot: S): boolean {
    return this.options.gone?.(slot) ?? false;
  }

  private leave(index: number): void {
    const [slot] = this.queue.splice(index, 1);
    if (slot === undefined) return;
    this.queued.delete(slot);
    this.turnReads.delete(slot);
  }
}
