/**
 * Nudges (a webhook delivery said a location changed): its live lane is due now, coalesced per location. A
 * nudged poll is its own kind of work (turn-rule.ts `nudge`, with its guaranteed share of the turns,
 * api.rateLimit.nudgeShare): the slot waits in the due queue's nudge heaps (`isNudged`), so a flood of
 * deliveries cannot starve the scheduled polls or history, and scheduled polls filling every worker cannot
 * starve the nudges. A location due already for its schedule is moved to the nudges, keeping its due time. A
 * location polling now gets exactly one follow-up poll, a nudged one, once its live traversal completes (or its
 * history turn ends), however many nudges came meanwhile; one in backoff or stopped keeps its health rule's due
 * time (a nudge must not hammer a failing API).
 *
 * The decision is nudgeOutcome (pure); Nudges keeps the bookkeeping: the slots by uid, the follow-ups asked,
 * and which slots are due for a nudge. A location that is leaving (membership.ts) is untracked as its removal
 * begins: a nudge naming it is `unknown`.
 */
import type { Clock } from '../../time/clock.js';
import type { Slot } from './scheduled-location.js';

/**
 * What a nudge did: made the live lane due now as a nudged poll (`due_now`; a location due already for its
 * schedule is moved ahead with the nudges); found it nudged already or a follow-up already asked (`coalesced`);
 * asked one follow-up live poll after the turn running now (`follow_up`); left a location in backoff or stopped
 * to its health rule (`held`); or named a location not scheduled here (`unknown`).
 */
export type NudgeOutcome = 'due_now' | 'coalesced' | 'follow_up' | 'held' | 'unknown';

/** What the nudge decision reads of a location scheduled here: its state, and what Nudges knows of it. */
export interface NudgedSlot {
  state: Slot['state'];
  /** Its live poll waits as a nudged one already. */
  nudged: boolean;
  /** A follow-up poll was asked for it already (it runs). */
  followUpAsked: boolean;
}

/** What a nudge does to `slot` (undefined: not scheduled here; see the module comment). */
export function nudgeOutcome(slot: NudgedSlot | undefined): NudgeOutcome {
  if (slot === undefined) return 'unknown';
  if (slot.state === 'running') return slot.followUpAsked ? 'coalesced' : 'follow_up';
  if (slot.state !== 'waiting') return 'held';
  return slot.nudged ? 'coalesced' : 'due_now';
}

export interface NudgesOptions {
  clock: Clock;
  /** Makes `slot` (marked nudged) due at `dueAt` and hands it out (a `due_now` nudge). */
  dueNow: (slot: Slot, dueAt: number) => void;
}

export class Nudges {
  /** Running locations nudged meanwhile: their next live poll is due at once when the turn ends. */
  private readonly followUps = new WeakSet<Slot>();
  /**
   * Locations whose live poll is due for a nudge, not for its schedule: they wait as the turn policy's `nudge`
   * kind, and stay one until the live traversal completes or the turn fails.
   */
  private readonly nudged = new WeakSet<Slot>();
  /** The scheduled slots by location uid. */
  private readonly byUid = new Map<string, Slot>();

  constructor(private readonly options: NudgesOptions) {}

  /** `slot` is scheduled: nudges naming its location reach it. */
  track(slot: Slot): void {
    this.byUid.set(slot.location.locationUid, slot);
  }

  /**
   * `slot` is leaving or gone: nudges naming its location are `unknown` (unless another slot has it). Called
   * again when it is gone.
   */
  untrack(slot: Slot): void {
    if (this.byUid.get(slot.location.locationUid) === slot) this.byUid.delete(slot.location.locationUid);
  }

  /** A webhook said `locationUid` changed (see the module comment). */
  nudge(locationUid: string): NudgeOutcome {
    const slot = this.byUid.get(locationUid);
    if (slot === undefined) return nudgeOutcome(undefined);
    const outcome = nudgeOutcome({
      state: slot.state,
      nudged: this.nudged.has(slot),
      followUpAsked: this.followUps.has(slot),
    });
    if (outcome === 'follow_up') this.followUps.add(slot);
    else if (outcome === 'due_now') {
      this.nudged.add(slot);
      this.options.dueNow(slot, Math.min(slot.dueAt, this.options.clock.now()));
    }
    return outcome;
  }

  /** Whether `slot`'s live poll is due for a nudge (its kind in the due queue and the turn policy). */
  isNudged(slot: Slot): boolean {
    return this.nudged.has(slot);
  }

  /**
   * The live traversal completed: the poll a nudge asked for is done. Returns when the live lane is due next:
   * at once, as a nudged poll, when a nudge asked a follow-up meanwhile; else in `scheduledDelayMs`.
   */
  afterLiveTraversal(slot: Slot, scheduledDelayMs: number): number {
    if (!this.followUps.delete(slot)) {
      this.nudged.delete(slot);
      return scheduledDelayMs;
    }
    this.nudged.add(slot);
    return 0;
  }

  /**
   * A history turn ended: the live lane is due at once, as a nudged poll, when a nudge asked a follow-up
   * meanwhile; else in `liveDelayMs`, as it was.
   */
  afterHistoryTurn(slot: Slot, liveDelayMs: number): number {
    if (!this.followUps.delete(slot)) return liveDelayMs;
    this.nudged.add(slot);
    return 0;
  }

  /** A turn failed (or was parked): the health rule's time rules, so the follow-up and the nudge are void. */
  turnFailed(slot: Slot): void {
    this.followUps.delete(slot);
    this.nudged.delete(slot);
  }
}
