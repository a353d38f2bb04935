import { describe, expect, it } from 'vitest';
import { pollPhase } from '../../../../src/sync/scheduler/poll-phase.js';
import { slotFor, statusOf } from '../../../../src/sync/scheduler/scheduled-location.js';
import { ManualClock } from '../../../support/clock.js';
import { loc } from '../../../support/sync/scheduler-harness.js';
import { ScriptedLocation } from '../../../support/sync/scripted-location.js';

describe('slotFor', () => {
  it("starts a location waiting, at its phase, with pages aborted by its own removal or the scheduler's hard stop", () => {
    const hardStop = new AbortController();
    const slot = slotFor(new ScriptedLocation(loc(1), new ManualClock()), hardStop.signal);
    expect(slot).toMatchObject({ state: 'waiting', phase: pollPhase(loc(1)), stops: 0, stoppedBy: null });
    expect(slot.pageSignal.aborted).toBe(false);
    slot.abort.abort();
    expect(slot.pageSignal.aborted).toBe(true);
    const other = slotFor(new ScriptedLocation(loc(2), new ManualClock()), hardStop.signal);
    hardStop.abort();
    expect(other.pageSignal.aborted).toBe(true);
  });
});

describe('statusOf', () => {
  it('shows when a waiting location is due, and the lane of a running one', () => {
    const location = new ScriptedLocation(loc(1), new ManualClock());
    const slot = slotFor(location, new AbortController().signal);
    slot.dueAt = 42;
    slot.lane = 'history';
    expect(statusOf(slot)).toMatchObject({
      locationUid: loc(1),
      state: 'waiting',
      nextRunAt: 42,
      lane: null,
    });
    slot.state = 'running';
    expect(statusOf(slot)).toMatchObject({ state: 'running', nextRunAt: null, lane: 'history' });
  });

  it('shows no due time for a location stopped for good, and a copy of its totals', () => {
    const location = new ScriptedLocation(loc(1), new ManualClock());
    const slot = slotFor(location, new AbortController().signal);
    slot.state = 'stopped';
    slot.dueAt = Number.POSITIVE_INFINITY;
    const status = statusOf(slot);
    expect(status.nextRunAt).toBeNull();
    location.totals.pages += 1;
    expect(status.totals.pages).toBe(0);
  });
});
