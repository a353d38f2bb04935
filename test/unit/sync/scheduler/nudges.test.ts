import { describe, expect, it } from 'vitest';
import { nudgeOutcome, Nudges, type NudgedSlot } from '../../../../src/sync/scheduler/nudges.js';
import { slotFor, type Slot } from '../../../../src/sync/scheduler/scheduled-location.js';
import { ManualClock } from '../../../support/clock.js';
import { loc } from '../../../support/sync/scheduler-harness.js';
import { ScriptedLocation } from '../../../support/sync/scripted-location.js';

const slot = (over: Partial<NudgedSlot> = {}): NudgedSlot => ({
  state: 'waiting',
  nudged: false,
  followUpAsked: false,
  ...over,
});

describe('nudgeOutcome', () => {
  it('is unknown for a location not scheduled here (or leaving: Nudges no longer tracks it)', () => {
    expect(nudgeOutcome(undefined)).toBe('unknown');
  });

  it('asks one follow-up of a running location, then coalesces', () => {
    expect(nudgeOutcome(slot({ state: 'running' }))).toBe('follow_up');
    expect(nudgeOutcome(slot({ state: 'running', followUpAsked: true }))).toBe('coalesced');
  });

  it('leaves a location in backoff, stopped or throttled to its own rule', () => {
    for (const state of ['backoff', 'stopped', 'throttled'] as const)
      expect(nudgeOutcome(slot({ state }))).toBe('held');
  });

  it('makes a waiting location due now as a nudge, due already for its schedule or not, unless nudged already', () => {
    expect(nudgeOutcome(slot())).toBe('due_now');
    expect(nudgeOutcome(slot({ nudged: true }))).toBe('coalesced');
  });
});

describe('Nudges', () => {
  const setUp = (dueAt = 60_000, over: Partial<Pick<Slot, 'state'>> = {}) => {
    const clock = new ManualClock(1_000);
    const madeDue: Array<[Slot, number]> = [];
    const nudges = new Nudges({ clock, dueNow: (s, at) => madeDue.push([s, at]) });
    const tracked = slotFor(new ScriptedLocation(loc(1), clock), new AbortController().signal);
    Object.assign(tracked, { dueAt, ...over });
    nudges.track(tracked);
    return { nudges, tracked, madeDue };
  };

  it('makes a waiting location due at the current time through dueNow, marked nudged', () => {
    const { nudges, tracked, madeDue } = setUp();
    expect(nudges.nudge(loc(1))).toBe('due_now');
    expect(madeDue).toEqual([[tracked, 1_000]]);
    expect(nudges.isNudged(tracked)).toBe(true);
    expect(nudges.nudge(loc(1))).toBe('coalesced');
  });

  it('moves a location due already for its schedule to the nudges, keeping its due time', () => {
    const { nudges, tracked, madeDue } = setUp(500);
    expect(nudges.nudge(loc(1))).toBe('due_now');
    expect(madeDue).toEqual([[tracked, 500]]);
  });

  it('keeps one follow-up of a running location, used once by the completed live traversal as a nudged poll', () => {
    const { nudges, tracked, madeDue } = setUp();
    tracked.state = 'running';
    expect(nudges.nudge(loc(1))).toBe('follow_up');
    expect(nudges.nudge(loc(1))).toBe('coalesced');
    expect(madeDue).toEqual([]);
    expect(nudges.afterLiveTraversal(tracked, 30_000)).toBe(0);
    expect(nudges.isNudged(tracked)).toBe(true);
    // The follow-up poll done, the location goes back to its schedule.
    expect(nudges.afterLiveTraversal(tracked, 30_000)).toBe(30_000);
    expect(nudges.isNudged(tracked)).toBe(false);
  });

  it('gives a history turn nudged meanwhile its follow-up, and otherwise leaves the live due time as it was', () => {
    const { nudges, tracked } = setUp(60_000);
    expect(nudges.nudge(loc(1))).toBe('due_now');
    tracked.state = 'running';
    expect(nudges.afterHistoryTurn(tracked, 7_000)).toBe(7_000);
    // A nudged live poll waiting beside the history turn stays one.
    expect(nudges.isNudged(tracked)).toBe(true);
    nudges.turnFailed(tracked);
    expect(nudges.isNudged(tracked)).toBe(false);
    nudges.nudge(loc(1));
    expect(nudges.afterHistoryTurn(tracked, 7_000)).toBe(0);
    expect(nudges.isNudged(tracked)).toBe(true);
  });

  it('voids the follow-up and the nudge of a failed turn', () => {
    const { nudges, tracked } = setUp(60_000);
    nudges.nudge(loc(1));
    tracked.state = 'running';
    nudges.nudge(loc(1));
    nudges.turnFailed(tracked);
    expect(nudges.isNudged(tracked)).toBe(false);
    expect(nudges.afterLiveTraversal(tracked, 30_000)).toBe(30_000);
  });

  it('answers unknown once the slot is untracked', () => {
    const { nudges, tracked } = setUp();
    nudges.untrack(tracked);
    expect(nudges.nudge(loc(1))).toBe('unknown');
  });
});
