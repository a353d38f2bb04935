import { describe, expect, it } from 'vitest';
import { Membership } from '../../../../src/sync/scheduler/membership.js';
import type { Slot } from '../../../../src/sync/scheduler/scheduled-location.js';
import { settles } from '../../../support/async.js';
import { ManualClock } from '../../../support/clock.js';
import { eventLoopTurns, loc } from '../../../support/sync/scheduler-harness.js';
import { ScriptedLocation } from '../../../support/sync/scripted-location.js';

/** A Membership whose collaborators record what they are told. */
function membership(clock = new ManualClock()) {
  const told: string[] = [];
  const scheduled: Array<[string, number]> = [];
  const hardStop = new AbortController();
  const members = new Membership({
    clock,
    hardStop: hardStop.signal,
    scopes: { scopeOf: (uid) => (uid === loc(2) ? 'second' : 'default') },
    due: { schedule: (slot: Slot, at: number) => void scheduled.push([slot.location.locationUid, at]) },
    stretch: {
      locationAdded: (scope) => void told.push(`added to ${scope}`),
      locationRemoved: (scope) => void told.push(`removed from ${scope}`),
    },
    nudges: {
      track: (slot) => void told.push(`track ${slot.location.locationUid}`),
      untrack: (slot) => void told.push(`untrack ${slot.location.locationUid}`),
    },
    health: { publishStopped: () => void told.push('stopped gauge') },
  });
  const uids = () => members.slots.map((s) => s.location.locationUid);
  return { members, told, scheduled, clock, uids };
}

describe('Membership', () => {
  it('schedules added locations due now, in their grant, tracked for nudges', () => {
    const { members, told, scheduled, clock, uids } = membership(new ManualClock(1_000));
    members.add([new ScriptedLocation(loc(1), clock), new ScriptedLocation(loc(2), clock)]);
    expect(uids()).toEqual([loc(1), loc(2)]);
    expect(members.slots.map((s) => s.scope)).toEqual(['default', 'second']);
    expect(scheduled).toEqual([
      [loc(1), 1_000],
      [loc(2), 1_000],
    ]);
    expect(told).toEqual([`added to default`, `track ${loc(1)}`, `added to second`, `track ${loc(2)}`]);
  });

  it('refuses a uid already scheduled, or twice in one call, adding none of the call', () => {
    const { members, clock, uids } = membership();
    members.add([new ScriptedLocation(loc(1), clock)]);
    expect(() => members.add([new ScriptedLocation(loc(1), clock)])).toThrow(RangeError);
    expect(() =>
      members.add([new ScriptedLocation(loc(2), clock), new ScriptedLocation(loc(2), clock)]),
    ).toThrow(RangeError);
    expect(uids()).toEqual([loc(1)]);
  });

  it('removes a location between pages at once: its signal aborted, its counts and nudges gone', async () => {
    const { members, told, clock, uids } = membership();
    members.add([new ScriptedLocation(loc(1), clock), new ScriptedLocation(loc(3), clock)]);
    const slot = members.slots[0];
    told.length = 0;
    await members.remove([loc(1), loc(9)], 60_000);
    expect(uids()).toEqual([loc(3)]);
    expect(slot !== undefined && members.isGone(slot)).toBe(true);
    expect(slot?.abort.signal.aborted).toBe(true);
    expect(told).toEqual([`removed from default`, `untrack ${loc(1)}`, 'stopped gauge']);
  });

  it('lets a page in flight end before the location leaves, and aborts it once the bound passes', async () => {
    const { members, told, clock, uids } = membership();
    members.add([new ScriptedLocation(loc(1), clock)]);
    const slot = members.slots[0] as Slot;
    slot.state = 'running';
    let left = false;
    const removal = members.remove([loc(1)], 5_000).then(() => (left = true));
    await eventLoopTurns();
    expect(left).toBe(false);
    expect(members.isLeaving(slot)).toBe(true);
    expect(members.isGone(slot)).toBe(false);
    // Nudges no longer reach it from the moment its removal began.
    expect(told).toContain(`untrack ${loc(1)}`);
    expect(uids()).toEqual([loc(1)]);
    clock.advance(4_999);
    await eventLoopTurns();
    expect(slot.abort.signal.aborted).toBe(false);
    clock.advance(1);
    await settles(() => slot.abort.signal.aborted, 'the page in flight aborted at the bound');
    // The page, aborted, ends its turn: only then does the location leave.
    expect(left).toBe(false);
    members.turnEnded(slot);
    await removal;
    expect(uids()).toEqual([]);
    expect(members.isGone(slot)).toBe(true);
    expect(members.isLeaving(slot)).toBe(false);
  });

  it('leaves a location whose turn ends without a removal where it is', () => {
    const { members, clock, uids } = membership();
    members.add([new ScriptedLocation(loc(1), clock)]);
    members.turnEnded(members.slots[0] as Slot);
    expect(uids()).toEqual([loc(1)]);
  });
});
