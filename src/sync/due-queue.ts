/**
 * When each location is due, and the workers parked until one is.
 *
 * Due times sit in a priority queue (tinyqueue, a binary heap): the next due location costs O(log n), not a
 * scan of every location. A location due again (`schedule`) takes a new sequence number, which voids its older
 * entries; so does running or leaving (the `waiting` predicate). Void entries are dropped when they reach the
 * head (lazy deletion: no decrease-key), so there is at most one live entry per location.
 *
 * Idle workers park here (`park`) and cost nothing while they wait: one timer for the whole scheduler, on the
 * injected Clock, is armed for the earliest due time, and when it fires the scheduler hands each location
 * then due to one parked worker (`handOut`), so a poll costs one wake-up, not one per worker.
 */
import TinyQueue from 'tinyqueue';
import { startTimer, type Clock, type Timer } from '../time/clock.js';

/** What the queue keeps of an item: its due time and its sequence number (both set by `schedule`). */
export interface Due {
  dueAt: number;
  seq: number;
}

/** An entry of the queue: an item's due time as of one `schedule`. */
export interface DueEntry<T extends Due> {
  item: T;
  dueAt: number;
  seq: number;
}

function byDueTime<T extends Due>(a: DueEntry<T>, b: DueEntry<T>): number {
  return a.dueAt - b.dueAt || a.seq - b.seq;
}

export interface DueQueueOptions<T> {
  clock: Clock;
  /** Whether an item's entry may still be taken (not running, not gone); others are void. */
  waiting: (item: T) => boolean;
  /** The timer fired: locations may be due (the scheduler hands them out, `handOut`). */
  onWake: () => void;
}

export class DueQueue<T extends Due> {
  private readonly queue = new TinyQueue<DueEntry<T>>([], byDueTime);
  private seq = 0;
  /** Parked workers, each waiting to be handed an item or released (undefined). */
  private readonly parked: Array<(item: T | undefined) => void> = [];
  /** The one timer: wakes parked workers at `timerAt`, the earliest due time. */
  private timer: Timer | null = null;
  private timerAt = Number.POSITIVE_INFINITY;

  constructor(private readonly options: DueQueueOptions<T>) {}

  /** Makes `item` due at `dueAt` (voiding its older entries); an item due never (infinite) is left out. */
  schedule(item: T, dueAt: number): void {
    item.dueAt = dueAt;
    item.seq = this.seq++;
    if (Number.isFinite(dueAt)) this.queue.push({ item, dueAt, seq: item.seq });
  }

  /** The earliest live entry (void ones at the head are dropped); undefined when none. */
  next(): DueEntry<T> | undefined {
    let head = this.queue.peek();
    while (head !== undefined && !this.isLive(head)) {
      this.queue.pop();
      head = this.queue.peek();
    }
    return head;
  }

  /** Whether an item is due now (waiting for a worker). */
  anyDue(): boolean {
    const head = this.next();
    return head !== undefined && head.dueAt <= this.options.clock.now();
  }

  /** Takes the item due first (earliest due time, then the order it became due) if one is due now. */
  takeDue(): T | undefined {
    if (!this.anyDue()) return undefined;
    return this.queue.pop()?.item;
  }

  /** Parks a worker until `handOut` gives it an item or `releaseAll` releases it (undefined). */
  park(): Promise<T | undefined> {
    const parked = new Promise<T | undefined>((resolve) => this.parked.push(resolve));
    this.armTimer();
    return parked;
  }

  /** Hands what `take` gives to parked workers, one each, until either runs out; then re-arms the timer. */
  handOut(take: () => T | undefined): void {
    while (this.parked.length > 0) {
      const item = take();
      if (item === undefined) break;
      this.parked.pop()?.(item);
    }
    this.armTimer();
  }

  /** Releases every parked worker (undefined) and cancels the timer: the stop, or nothing left to do. */
  releaseAll(): void {
    this.cancelTimer();
    for (const release of this.parked.splice(0)) release(undefined);
  }

  /** Cancels the timer (the scheduler's run is over). */
  cancelTimer(): void {
    this.timer?.cancel();
    this.timer = null;
    this.timerAt = Number.POSITIVE_INFINITY;
  }

  private isLive(entry: DueEntry<T>): boolean {
    return entry.seq === entry.item.seq && this.options.waiting(entry.item);
  }

  /**
   * Keeps the one timer at or before the earliest due time while a worker is parked. A timer armed earlier
   * than needed is left to fire (the wake-up then re-arms it): cheaper than cancelling, which a location taken
   * by a worker just before its timer would otherwise cost on every poll.
   */
  private armTimer(): void {
    if (this.parked.length === 0) return;
    const at = this.next()?.dueAt ?? Number.POSITIVE_INFINITY;
    if (at >= this.timerAt) return;
    this.cancelTimer();
    if (!Number.isFinite(at)) return;
    const { clock } = this.options;
    this.timerAt = at;
    this.timer = startTimer(clock, Math.max(0, at - clock.now()), () => {
      this.timer = null;
      this.timerAt = Number.POSITIVE_INFINITY;
      this.options.onWake();
    });
  }
}
