/**
 * The scheduler's locations as they come and go (run-time membership, distributed mode): `add` schedules
 * locations now owned, due at once; `remove(uids, boundMs)` stops taking pages of locations no longer owned: a
 * location between pages leaves at once, one in the middle of a page may finish it for up to `boundMs` (on the
 * injected clock), after which the page is aborted (abandoned before its commit); it resolves once none of them
 * has a page in flight. The units that count or reach locations (the stretch rule's counts per grant, nudges,
 * the stopped gauge) are told of each arrival and departure here.
 */
import { startTimer, type Clock } from '../../time/clock.js';
import type { DueQueue } from './due-queue.js';
import type { IntervalStretch } from './stretch.js';
import type { LocationHealth } from './health.js';
import type { Nudges } from './nudges.js';
import type { RateLimitScopes } from '../ports.js';
import { slotFor, type ScheduledLocation, type Slot } from './scheduled-location.js';

export interface MembershipOptions {
  clock: Clock;
  /** The scheduler's hard stop: it aborts every slot's pages too. */
  hardStop: AbortSignal;
  scopes: Pick<RateLimitScopes, 'scopeOf'>;
  due: Pick<DueQueue<Slot>, 'schedule'>;
  stretch: Pick<IntervalStretch, 'locationAdded' | 'locationRemoved'>;
  nudges: Pick<Nudges, 'track' | 'untrack'>;
  health: Pick<LocationHealth, 'publishStopped'>;
}

export class Membership {
  /** The slots scheduled now (a slot leaving stays until its page in flight ends). */
  readonly slots: Slot[] = [];
  /** Slots remove() asked for while a page of theirs was in flight: resolved when their turn ends. */
  private readonly leaving = new Map<Slot, () => void>();
  /** Slots no longer scheduled: their entries in the due queue and the backfill queue are void. */
  private readonly gone = new WeakSet<Slot>();

  constructor(private readonly options: MembershipOptions) {}

  /** Schedules locations, due at once, without checking their uids (the caller did). */
  schedule(locations: readonly ScheduledLocation[]): void {
    for (const location of locations) this.slots.push(this.newSlot(location));
  }

  /** Schedules locations (due at once). A uid already scheduled (or still leaving) is a RangeError. */
  add(locations: readonly ScheduledLocation[]): void {
    const present = new Set(this.slots.map((s) => s.location.locationUid));
    for (const location of locations) {
      if (present.has(location.locationUid))
        throw new RangeError(`location ${location.locationUid} is already scheduled`);
      present.add(location.locationUid);
    }
    this.schedule(locations);
  }

  /**
   * Unschedules locations (unknown uids are ignored): no page of theirs starts any more. Resolves once
   * none of them has a page in flight; a page still in flight after `boundMs` is aborted. Their status
   * and their share of locations_stopped go with them.
   */
  async remove(locationUids: Iterable<string>, boundMs: number): Promise<void> {
    const uids = new Set(locationUids);
    const leaving: Array<Promise<void>> = [];
    const inFlight: Slot[] = [];
    for (const slot of [...this.slots]) {
      if (!uids.has(slot.location.locationUid) || this.leaving.has(slot)) continue;
      if (slot.state !== 'running') {
        this.detach(slot);
        continue;
      }
      inFlight.push(slot);
      // Nudges no longer reach it: it takes no further page.
      this.options.nudges.untrack(slot);
      leaving.push(new Promise<void>((resolve) => this.leaving.set(slot, resolve)));
    }
    this.options.health.publishStopped();
    if (leaving.length === 0) return;
    const bound = startTimer(this.options.clock, boundMs, () => {
      for (const slot of inFlight)
        slot.abort.abort(new Error('the location was removed: abandoning its page in flight'));
    });
    try {
      await Promise.all(leaving);
    } finally {
      bound.cancel();
    }
  }

  /** A turn of `slot` is over: a location removed meanwhile leaves now. */
  turnEnded(slot: Slot): void {
    const removed = this.leaving.get(slot);
    if (removed !== undefined) {
      this.leaving.delete(slot);
      this.detach(slot);
      this.options.health.publishStopped();
      removed();
    }
  }

  /** Whether remove() asked for `slot` while a page of it was in flight: it takes no further page. */
  isLeaving(slot: Slot): boolean {
    return this.leaving.has(slot);
  }

  /** Whether `slot` is no longer scheduled. */
  isGone(slot: Slot): boolean {
    return this.gone.has(slot);
  }

  private newSlot(location: ScheduledLocation): Slot {
    const { hardStop, scopes, stretch, nudges, due, clock } = this.options;
    const slot = slotFor(location, hardStop, scopes.scopeOf(location.locationUid));
    stretch.locationAdded(slot.scope);
    nudges.track(slot);
    due.schedule(slot, clock.now());
    return slot;
  }

  private detach(slot: Slot): void {
    this.gone.add(slot);
    // A read-ahead its last page started (listing and GETs, on the page signal) must not outlive the
    // location's removal: it would spend API quota at every rebalance for nothing.
    if (!slot.abort.signal.aborted) slot.abort.abort(new Error('the location was removed'));
    const index = this.slots.indexOf(slot);
    if (index >= 0) {
      this.slots.splice(index, 1);
      this.options.stretch.locationRemoved(slot.scope);
    }
    this.options.nudges.untrack(slot);
  }
}
