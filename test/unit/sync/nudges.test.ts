import { describe, expect, it } from 'vitest';
import { nudgeOutcome, Nudges, type NudgedSlot } from '../../../src/sync/nudges.js';
import { slotFor, type Slot } from '../../../src/sync/scheduled-location.js';
import { ManualClock } from '../../support/clock.js';
import { loc } from '../../support/sync/scheduler-harness.js';
import { ScriptedLocation } from '../../support/sync/scripted-location.js';

const slot = (over: Partial<NudgedSlot> = {}): NudgedSlot => ({
  state: 'waiting',
  dueAt: 5_000,
  removed: null,
  ...over,
});

describe('nudgeOutcome', () => {
  it('is unknown for a location not scheduled here or leaving', () => {
    expect(nudgeOutcome(undefined, false, 0)).toBe('unknown');
    expect(nudgeOutcome(slot({ removed: () => undefined }), false, 0)).toBe('unknown');
  });

  it('asks one follow-up of a running location, then coalesces', () => {
    expect(nudgeOutcome(slot({ state: 'running' }), false, 0)).toBe('follow_up');
    expect(nudgeOutcome(slot({ state: 'running' }), true, 0)).toBe('coalesced');
  });

  it('leaves a location in backoff, stopped or throttled to its own rule', () => {
    for (const state of ['backoff', 'stopped', 'throttled'] as const)
      expect(nudgeOutcome(slot({ state }), false, 0)).toBe('held');
  });

  it('makes a waiting location due now unless it is due already', () => {
    expect(nudgeOutcome(slot({ dueAt: 5_000 }), false, 1_000)).toBe('due_now');
    expect(nudgeOutcome(slot({ dueAt: 1_000 }), false, 1_000)).toBe('coalesced');
  });
});

describe('Nudges', () => {
  const setUp = () => {
    const clock = new ManualClock(1_000);
    const madeDue: Array<[Slot, number]> = [];
    const nudges = new Nudges({ clock, dueNow: (s, nowMs) => madeDue.push([s, nowMs]) });
    const tracked = slotFor(new ScriptedLocation(loc(1), clock), new AbortController().signal);
    tracked.dueAt = 60_000;
    nudges.track(tracked);
    return { nudges, tracked, madeDue };
  };

  it('makes a waiting location due at the current time through dueNow', () => {
    const { nudges, tracked, madeDue } = setUp();
    expect(nudges.nudge(loc(1))).toBe('due_now');
    expect(madeDue).toEqual([[tracked, 1_000]]);
  });

  it('keeps one follow-up of a running location, taken once', () => {
    const { nudges, tracked, madeDue } = setUp();
    tracked.state = 'running';
    expect(nudges.nudge(loc(1))).toBe('follow_up');
    expect(nudges.nudge(loc(1))).toBe('coalesced');
    expect(madeDue).toEqual([]);
    expect(nudges.takeFollowUp(tracked)).toBe(true);
    expect(nudges.takeFollowUp(tracked)).toBe(false);
  });

  it('answers unknown once the slot is untracked', () => {
    const { nudges, tracked } = setUp();
    nudges.untrack(tracked);
    expect(nudges.nudge(loc(1))).toBe('unknown');
  });
});
