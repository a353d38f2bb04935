/**
 * Nudges (a webhook delivery said a location changed): its live lane is due now (before the locations due
 * later, after those due already), coalesced per location. A location polling now gets exactly one follow-up
 * live poll once its live traversal completes (or its history turn ends), however many nudges came meanwhile;
 * one in backoff or stopped keeps its health rule's due time (a nudge must not hammer a failing API). A nudged
 * poll is an ordinary live turn: the turn policy's share rule counts it as live work.
 *
 * The decision is nudgeOutcome (pure); Nudges keeps the bookkeeping: the slots by uid, the follow-ups asked.
 */
import type { Clock } from '../time/clock.js';
import type { Slot } from './scheduled-location.js';

/**
 * What a nudge did: made the live lane due now (`due_now`); found it due already or a follow-up already asked
 * (`coalesced`); asked one follow-up live poll after the turn running now (`follow_up`); left a location in
 * backoff or stopped to its health rule (`held`); or named a location not scheduled here (`unknown`).
 */
export type NudgeOutcome = 'due_now' | 'coalesced' | 'follow_up' | 'held' | 'unknown';

/** What the nudge decision reads of a slot. */
export type NudgedSlot = Pick<Slot, 'state' | 'dueAt' | 'removed'>;

/**
 * What a nudge does to `slot` (undefined: not scheduled here) at `nowMs`, given whether a follow-up was asked
 * for it already (see the module comment).
 */
export function nudgeOutcome(
  slot: NudgedSlot | undefined,
  followUpAsked: boolean,
  nowMs: number,
): NudgeOutcome {
  if (slot === undefined || slot.removed !== null) return 'unknown';
  if (slot.state === 'running') return followUpAsked ? 'coalesced' : 'follow_up';
  if (slot.state !== 'waiting') return 'held';
  return slot.dueAt <= nowMs ? 'coalesced' : 'due_now';
}

export interface NudgesOptions {
  clock: Clock;
  /** Makes `slot` due at `nowMs` and hands it out (a `due_now` nudge). */
  dueNow: (slot: Slot, nowMs: number) => void;
}

export class Nudges {
  /** Running locations nudged meanwhile: their next live poll is due at once when the turn ends. */
  private readonly followUps = new WeakSet<Slot>();
  /** The scheduled slots by location uid. */
  private readonly byUid = new Map<string, Slot>();

  constructor(private readonly options: NudgesOptions) {}

  /** `slot` is scheduled: nudges naming its location reach it. */
  track(slot: Slot): void {
    this.byUid.set(slot.location.locationUid, slot);
  }

  /** `slot` is no longer scheduled: nudges naming its location are `unknown` (unless another slot has it). */
  untrack(slot: Slot): void {
    if (this.byUid.get(slot.location.locationUid) === slot) this.byUid.delete(slot.location.locationUid);
  }

  /** A webhook said `locationUid` changed (see the module comment). */
  nudge(locationUid: string): NudgeOutcome {
    const slot = this.byUid.get(locationUid);
    const now = this.options.clock.now();
    const outcome = nudgeOutcome(slot, slot !== undefined && this.followUps.has(slot), now);
    if (slot === undefined) return outcome;
    if (outcome === 'follow_up') this.followUps.add(slot);
    else if (outcome === 'due_now') this.options.dueNow(slot, now);
    return outcome;
  }

  /** Whether a nudge asked `slot` a follow-up poll; it is asked no more (the turn ended: it is used or void). */
  takeFollowUp(slot: Slot): boolean {
    return this.followUps.delete(slot);
  }
}
