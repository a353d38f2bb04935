import { describe, expect, it } from 'vitest';
import {
  historySlots,
  nextTurn,
  NO_DEFICITS,
  turnShares,
  type TurnDeficits,
  type TurnKind,
  type WorkNow,
} from '../../../src/sync/turn-policy.js';

const both = (historyTurns = 0, maxLocationsInFlight = 4): WorkNow => ({
  waiting: { live: true, history: true },
  historyTurns,
  maxLocationsInFlight,
});

/** The kinds given over `turns` turns while both kinds always wait, from no credit. */
function turnsGiven(historyShare: number, turns: number, work: WorkNow = both()): TurnKind[] {
  const shares = turnShares(historyShare);
  let deficits: TurnDeficits = NO_DEFICITS;
  const given: TurnKind[] = [];
  for (let i = 0; i < turns; i++) {
    const choice = nextTurn(deficits, shares, work);
    deficits = choice.deficits;
    if (choice.kind !== null) given.push(choice.kind);
  }
  return given;
}

const count = (kinds: TurnKind[], kind: TurnKind) => kinds.filter((k) => k === kind).length;

describe('historySlots', () => {
  it('is half the slots, rounded down, and at least one', () => {
    expect([1, 2, 3, 4, 5, 8].map(historySlots)).toEqual([1, 1, 1, 2, 2, 4]);
  });
});

describe('turnShares', () => {
  it('gives history its share and live the rest, and refuses a share outside 0..1', () => {
    expect(turnShares(0.25)).toEqual({ live: 0.75, history: 0.25 });
    expect(() => turnShares(1.5)).toThrow(RangeError);
    expect(() => turnShares(Number.NaN)).toThrow(RangeError);
  });
});

describe('nextTurn', () => {
  it('gives each kind its guaranteed share of the turns while both always wait (live first on a tie)', () => {
    expect(turnsGiven(0.25, 8)).toEqual([
      'live',
      'live',
      'history',
      'live',
      'live',
      'live',
      'history',
      'live',
    ]);
    const many = turnsGiven(0.25, 1000);
    expect(count(many, 'history')).toBe(250);
    expect(turnsGiven(0.5, 4)).toEqual(['live', 'history', 'live', 'history']);
  });

  it('starves no kind over any window of turns: history has a turn in every 1/share turns', () => {
    for (const share of [0.1, 0.25, 1 / 3, 0.9]) {
      const given = turnsGiven(share, 400);
      const window = Math.ceil(1 / Math.min(share, 1 - share));
      for (let start = 0; start + window <= given.length; start++) {
        const slice = given.slice(start, start + window);
        expect(count(slice, 'history'), `share ${share} at ${start}`).toBeGreaterThan(0);
        expect(count(slice, 'live'), `share ${share} at ${start}`).toBeGreaterThan(0);
      }
    }
  });

  it('lets a kind alone waiting borrow the idle share, without banking credit for the idle one', () => {
    const shares = turnShares(0.25);
    const liveOnly: WorkNow = {
      waiting: { live: true, history: false },
      historyTurns: 0,
      maxLocationsInFlight: 4,
    };
    let deficits: TurnDeficits = NO_DEFICITS;
    for (let i = 0; i < 10; i++) {
      const choice = nextTurn(deficits, shares, liveOnly);
      expect(choice.kind).toBe('live');
      deficits = choice.deficits;
    }
    expect(deficits).toEqual({ live: 0, history: 0 });
    // Once history waits too, it gets its share from then on, not the ten turns it missed.
    const after = turnsGiven(0.25, 4);
    expect(after).toEqual(['live', 'live', 'history', 'live']);
    const historyOnly: WorkNow = {
      waiting: { live: false, history: true },
      historyTurns: 0,
      maxLocationsInFlight: 4,
    };
    expect(nextTurn(NO_DEFICITS, shares, historyOnly).kind).toBe('history');
  });

  it('gives no turn when nothing waits', () => {
    const none: WorkNow = {
      waiting: { live: false, history: false },
      historyTurns: 0,
      maxLocationsInFlight: 4,
    };
    expect(nextTurn({ live: 0.5, history: -0.5 }, turnShares(0.25), none)).toEqual({
      kind: null,
      deficits: { live: 0, history: 0 },
    });
  });

  it('runs history in at most half the slots (at least one): live takes the others', () => {
    const shares = turnShares(0.9);
    expect(nextTurn(NO_DEFICITS, shares, both(1, 4)).kind).toBe('history');
    expect(nextTurn(NO_DEFICITS, shares, both(2, 4)).kind).toBe('live');
    expect(nextTurn(NO_DEFICITS, shares, both(1, 1)).kind).toBe('live');
    const historyOnly: WorkNow = {
      waiting: { live: false, history: true },
      historyTurns: 2,
      maxLocationsInFlight: 4,
    };
    expect(nextTurn(NO_DEFICITS, shares, historyOnly).kind).toBeNull();
  });

  it('with a share of 0, gives history only the turns live leaves (strict, as api.rateLimit.backfillShare 0)', () => {
    expect(count(turnsGiven(0, 100), 'history')).toBe(0);
  });
});
