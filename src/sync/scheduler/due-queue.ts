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
 *
 * Groups (the locations' rate-limit scopes: OAuth grants): each group has its own heap, and the item
 * taken next comes from the groups with an item due now in turn (deficit round robin with one turn per item:
 * round robin), so a grant with many locations due does not take every worker from a grant with few. A group
 * held (its scope waits out a Retry-After or a spent quota: `heldUntil`) gives no item: its items due now are
 * made due at the hold's end (`parked` says so to the owner), without a worker, and the others go on.
 *
 * Kinds (`kindOf`: a scheduled live poll or a nudged one): each kind has its own heaps, so the owner
 * asks whether an item of a kind is due (`anyDue(kind)`) and takes one of that kind (`takeDue(kind)`), the
 * turn policy choosing the kind. An item's kind is read when it is scheduled.
 */
import TinyQueue from 'tinyqueue';
import { startTimer, type Clock, type Timer } from '../../time/clock.js';

/** What the queue keeps on an item: its due time (set by `schedule`; the item's owner reads it). */
export interface Due {
  dueAt: number;
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
  /** The group of an item (its rate-limit scope); one group for all when not given. */
  groupOf?: (item: T) => string;
  /** The kind of an item as it is scheduled (see the module comment); one kind for all when not given. */
  kindOf?: (item: T) => string;
  /** Until when a group is held (ms since epoch), if it is held now; null when it is not held now. */
  heldUntil?: (group: string) => number | null;
  /** An item due now was made due at `until`, its group's hold's end (before it is scheduled again). */
  parked?: (item: T, until: number) => void;
}

/** One kind's heaps: one per group, and the groups in the order of the round robin. */
interface KindHeaps<T extends Due> {
  heaps: Map<string, TinyQueue<DueEntry<T>>>;
  groups: string[];
  /** Where the round robin starts looking next: the group after the one served last. */
  turn: number;
}

export class DueQueue<T extends Due> {
  private readonly kinds = new Map<string, KindHeaps<T>>();
  /** Every heap of every kind, for `next` (asked on every wake-up and turn: an array, not two map iterations). */
  private readonly heaps: TinyQueue<DueEntry<T>>[] = [];
  private seq = 0;
  /** Each item's sequence number as of its last `schedule`: its entries with an older one are void. */
  private readonly latest = new WeakMap<T, number>();
  /** Parked workers, each waiting to be handed an item or released (undefined). */
  private readonly parked: Array<(item: T | undefined) => void> = [];
  /** The one timer: wakes parked workers at `timerAt`, the earliest due time. */
  private timer: Timer | null = null;
  private timerAt = Number.POSITIVE_INFINITY;
  /** The earliest wake-up asked for without an item due then (`wakeAt`); infinite: none. */
  private wakeUpAt = Number.POSITIVE_INFINITY;

  constructor(private readonly options: DueQueueOptions<T>) {}

  /** Makes `item` due at `dueAt` (voiding its older entries); an item due never (infinite) is left out. */
  schedule(item: T, dueAt: number): void {
    const seq = this.seq++;
    item.dueAt = dueAt;
    this.latest.set(item, seq);
    if (Number.isFinite(dueAt)) this.heapOf(item).push({ item, dueAt, seq });
  }

  /** The earliest live entry of every kind and group (void ones at the heads are dropped); undefined when none. */
  next(): DueEntry<T> | undefined {
    let earliest: DueEntry<T> | undefined;
    for (const heap of this.heaps) {
      const head = this.headOf(heap);
      if (head !== undefined && (earliest === undefined || byDueTime(head, earliest) < 0)) earliest = head;
    }
    return earliest;
  }

  /** Whether an item (of `kind`, when given) is due now (waiting for a worker); held groups' are parked first. */
  anyDue(kind?: string): boolean {
    return this.kindsOf(kind).some((k) => k.groups.some((group) => this.dueHead(k, group) !== undefined));
  }

  /**
   * Takes an item due now (of `kind`, when given), if any: from the next group in turn with one due (round
   * robin), the one due first in it (earliest due time, then the order it became due).
   */
  takeDue(kind?: string): T | undefined {
    for (const k of this.kindsOf(kind)) {
      const count = k.groups.length;
      for (let i = 0; i < count; i++) {
        const at = (k.turn + i) % count;
        const group = k.groups[at] as string;
        if (this.dueHead(k, group) === undefined) continue;
        k.turn = (at + 1) % count;
        return k.heaps.get(group)?.pop()?.item;
      }
    }
    return undefined;
  }

  /**
   * Wakes the parked workers at `at` (ms since epoch) even if no item is due then: work the queue does not
   * hold becomes possible (a held grant's history, at the hold's end). One timer still serves both.
   */
  wakeAt(at: number): void {
    if (at < this.wakeUpAt) this.wakeUpAt = at;
    this.armTimer();
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

  private kindsOf(kind: string | undefined): KindHeaps<T>[] {
    if (kind === undefined) return [...this.kinds.values()];
    const one = this.kinds.get(kind);
    return one === undefined ? [] : [one];
  }

  private heapOf(item: T): TinyQueue<DueEntry<T>> {
    const kindName = this.options.kindOf?.(item) ?? '';
    let kind = this.kinds.get(kindName);
    if (kind === undefined) {
      kind = { heaps: new Map(), groups: [], turn: 0 };
      this.kinds.set(kindName, kind);
    }
    const group = this.options.groupOf?.(item) ?? '';
    let heap = kind.heaps.get(group);
    if (heap === undefined) {
      heap = new TinyQueue<DueEntry<T>>([], byDueTime);
      kind.heaps.set(group, heap);
      this.heaps.push(heap);
      kind.groups.push(group);
    }
    return heap;
  }

  private headOf(heap: TinyQueue<DueEntry<T>>): DueEntry<T> | undefined {
    let head = heap.peek();
    while (head !== undefined && !this.isLive(head)) {
      heap.pop();
      head = heap.peek();
    }
    return head;
  }

  /** The group's entry due now, if any; while the group is held, its items due now move to the hold's end. */
  private dueHead(kind: KindHeaps<T>, group: string): DueEntry<T> | undefined {
    const heap = kind.heaps.get(group);
    if (heap === undefined) return undefined;
    const now = this.options.clock.now();
    let head = this.headOf(heap);
    if (head === undefined || head.dueAt > now) return undefined;
    const until = this.options.heldUntil?.(group) ?? null;
    if (until === null) return head;
    while (head !== undefined && head.dueAt <= now) {
      heap.pop();
      this.options.parked?.(head.item, until);
      this.schedule(head.item, until);
      head = this.headOf(heap);
    }
    return undefined;
  }

  private isLive(entry: DueEntry<T>): boolean {
    return entry.seq === this.latest.get(entry.item) && this.options.waiting(entry.item);
  }

  /**
   * Keeps the one timer at or before the earliest due time while a worker is parked. A timer armed earlier
   * than needed is left to fire (the wake-up then re-arms it): cheaper than cancelling, which a location taken
   * by a worker just before its timer would otherwise cost on every poll.
   */
  private armTimer(): void {
    if (this.parked.length === 0) return;
    if (this.wakeUpAt <= this.options.clock.now()) this.wakeUpAt = Number.POSITIVE_INFINITY;
    const at = Math.min(this.next()?.dueAt ?? Number.POSITIVE_INFINITY, this.wakeUpAt);
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
