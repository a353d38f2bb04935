import { describe, expect, it } from 'vitest';
import {
  historySlots,
  nextTurn,
  NO_DEFICITS,
  turnShares,
  type TurnDeficits,
  type TurnKind,
  type TurnShares,
  type WorkNow,
} from '../../../../src/sync/scheduler/turn-rule.js';

const work = (
  waiting: Partial<Record<TurnKind, boolean>>,
  historyTurns = 0,
  maxLocationsInFlight = 4,
): WorkNow => ({
  waiting: { nudge: false, live: false, history: false, ...waiting },
  historyTurns,
  maxLocationsInFlight,
});

const both = (historyTurns = 0, maxLocationsInFlight = 4): WorkNow =>
  work({ live: true, history: true }, historyTurns, maxLocationsInFlight);
const all = work({ nudge: true, live: true, history: true });

/** The kinds given over `turns` turns while the same kinds always wait, from no credit. */
function turnsGiven(shares: TurnShares | number, turns: number, now: WorkNow = both()): TurnKind[] {
  const given = typeof shares === 'number' ? turnShares({ history: shares, nudge: 0 }) : shares;
  let deficits: TurnDeficits = NO_DEFICITS;
  const kinds: TurnKind[] = [];
  for (let i = 0; i < turns; i++) {
    const choice = nextTurn(deficits, given, now);
    deficits = choice.deficits;
    if (choice.kind !== null) kinds.push(choice.kind);
  }
  return kinds;
}

const count = (kinds: TurnKind[], kind: TurnKind) => kinds.filter((k) => k === kind).length;

describe('historySlots', () => {
  it('is half the slots, rounded down, and at least one', () => {
    expect([1, 2, 3, 4, 5, 8].map(historySlots)).toEqual([1, 1, 1, 2, 2, 4]);
  });
});

describe('turnShares', () => {
  it('gives history and nudges their shares and scheduled polls the rest, a fifth of it to checks', () => {
    expect(turnShares({ history: 0.25, nudge: 0 })).toEqual({
      nudge: 0,
      live: 0.6,
      check: 0.15000000000000002,
      history: 0.25,
    });
    expect(turnShares({ history: 0.25, nudge: 0.25 })).toEqual({
      nudge: 0.25,
      live: 0.4,
      check: 0.1,
      history: 0.25,
    });
    expect(turnShares({ history: 0.5, nudge: 0.5 })).toEqual({ nudge: 0.5, live: 0, check: 0, history: 0.5 });
  });

  it('refuses a share outside 0..1, and shares that sum to more than 1', () => {
    expect(() => turnShares({ history: 1.5, nudge: 0 })).toThrow(RangeError);
    expect(() => turnShares({ history: Number.NaN, nudge: 0 })).toThrow(RangeError);
    expect(() => turnShares({ history: 0, nudge: -0.1 })).toThrow(RangeError);
    expect(() => turnShares({ history: 0.6, nudge: 0.5 })).toThrow(/sum to at most 1/);
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

  it('gives each of three kinds its guaranteed share while all three always wait', () => {
    const shares = turnShares({ history: 0.25, nudge: 0.25 });
    const many = turnsGiven(shares, 1000, all);
    expect([count(many, 'nudge'), count(many, 'live'), count(many, 'history')]).toEqual([250, 500, 250]);
    const skewed = turnsGiven(turnShares({ history: 0.1, nudge: 0.6 }), 1000, all);
    expect([count(skewed, 'nudge'), count(skewed, 'live'), count(skewed, 'history')]).toEqual([
      600, 300, 100,
    ]);
  });

  it('breaks ties nudge first, then live, then history', () => {
    const halves = (a: TurnKind, b: TurnKind): TurnShares => ({
      nudge: 0,
      live: 0,
      check: 0,
      history: 0,
      [a]: 0.5,
      [b]: 0.5,
    });
    expect(turnsGiven(halves('nudge', 'live'), 4, all)).toEqual(['nudge', 'live', 'nudge', 'live']);
    expect(turnsGiven(halves('live', 'history'), 4, all)).toEqual(['live', 'history', 'live', 'history']);
    expect(turnsGiven(halves('nudge', 'history'), 4, all)).toEqual(['nudge', 'history', 'nudge', 'history']);
  });

  it('starves no kind over any window of turns: each has a turn in every 1/share turns', () => {
    for (const share of [0.1, 0.25, 1 / 3, 0.9]) {
      const given = turnsGiven(share, 400);
      const window = Math.ceil(1 / Math.min(share, 1 - share));
      for (let start = 0; start + window <= given.length; start++) {
        const slice = given.slice(start, start + window);
        expect(count(slice, 'history'), `share ${share} at ${start}`).toBeGreaterThan(0);
        expect(count(slice, 'live'), `share ${share} at ${start}`).toBeGreaterThan(0);
      }
    }
    const three = turnsGiven(turnShares({ history: 0.2, nudge: 0.3 }), 400, all);
    for (let start = 0; start + 5 <= three.length; start++) {
      const slice = three.slice(start, start + 5);
      for (const kind of ['nudge', 'live', 'history'] as const)
        expect(count(slice, kind), `${kind} at ${start}`).toBeGreaterThan(0);
    }
  });

  it("lends an idle kind's share to the kinds waiting, in proportion to their shares", () => {
    const shares = turnShares({ history: 0.25, nudge: 0.25 });
    // No nudge waits: live and history share its quarter 2:1.
    const noNudge = turnsGiven(shares, 900, both());
    expect([count(noNudge, 'live'), count(noNudge, 'history')]).toEqual([600, 300]);
    // No scheduled poll waits: nudges and history share live's half 1:1.
    const noLive = turnsGiven(shares, 900, work({ nudge: true, history: true }));
    expect([count(noLive, 'nudge'), count(noLive, 'history')]).toEqual([450, 450]);
    // A delivery flood with history idle: nudges get their share, scheduled polls theirs and history's.
    const flood = turnsGiven(shares, 900, work({ nudge: true, live: true }));
    expect([count(flood, 'nudge'), count(flood, 'live')]).toEqual([300, 600]);
  });

  it('lets a kind alone waiting borrow the idle shares, without banking credit for the idle ones', () => {
    const shares = turnShares({ history: 0.25, nudge: 0.25 });
    let deficits: TurnDeficits = NO_DEFICITS;
    for (let i = 0; i < 10; i++) {
      const choice = nextTurn(deficits, shares, work({ live: true }));
      expect(choice.kind).toBe('live');
      deficits = choice.deficits;
    }
    expect(deficits).toEqual(NO_DEFICITS);
    // Once the others wait too, they get their shares from then on, not the ten turns they missed.
    expect(turnsGiven(shares, 4, all)).toEqual(['live', 'nudge', 'history', 'live']);
    expect(nextTurn(NO_DEFICITS, shares, work({ history: true })).kind).toBe('history');
    expect(nextTurn(NO_DEFICITS, shares, work({ nudge: true })).kind).toBe('nudge');
    // A kind stopping waiting loses its credit.
    const owed = { nudge: 0.75, live: -0.5, check: 0, history: -0.25 };
    expect(nextTurn(owed, shares, both()).deficits.nudge).toBe(0);
  });

  it('gives no turn when nothing waits', () => {
    expect(
      nextTurn(
        { nudge: 0.2, live: 0.5, check: 0, history: -0.5 },
        turnShares({ history: 0.25, nudge: 0 }),
        work({}),
      ),
    ).toEqual({
      kind: null,
      deficits: NO_DEFICITS,
    });
  });

  it('runs history in at most half the slots (at least one): the other kinds take the others', () => {
    const shares = turnShares({ history: 0.9, nudge: 0 });
    expect(nextTurn(NO_DEFICITS, shares, both(1, 4)).kind).toBe('history');
    expect(nextTurn(NO_DEFICITS, shares, both(2, 4)).kind).toBe('live');
    expect(nextTurn(NO_DEFICITS, shares, both(1, 1)).kind).toBe('live');
    expect(nextTurn(NO_DEFICITS, shares, work({ history: true }, 2, 4)).kind).toBeNull();
    expect(nextTurn(NO_DEFICITS, shares, work({ history: true, nudge: true }, 2, 4)).kind).toBe('nudge');
  });

  it('with a share of 0, gives history only the turns live leaves (strict, as api.rateLimit.backfillShare 0)', () => {
    expect(count(turnsGiven(0, 100), 'history')).toBe(0);
  });

  it('with shares of 0 for history and nudges, gives them only the turns scheduled polls leave', () => {
    const shares = turnShares({ history: 0, nudge: 0 });
    expect(count(turnsGiven(shares, 100, all), 'live')).toBe(100);
    // Between the two zero shares, the tie order decides.
    expect(nextTurn(NO_DEFICITS, shares, work({ nudge: true, history: true })).kind).toBe('nudge');
  });
});

describe('nextTurn with first traversals (checks)', () => {
  const shares = turnShares({ history: 0.25, nudge: 0.25 });
  const work = (waiting: Partial<Record<TurnKind, boolean>>): WorkNow => ({
    waiting,
    historyTurns: 0,
    maxLocationsInFlight: 4,
  });

  it('gives nudges most turns while checks wait beside them, checks a bounded share (2 in 7)', () => {
    let deficits = NO_DEFICITS;
    const kinds: Array<TurnKind | null> = [];
    for (let i = 0; i < 700; i++) {
      const choice = nextTurn(deficits, shares, work({ nudge: true, check: true }));
      deficits = choice.deficits;
      kinds.push(choice.kind);
    }
    expect(kinds[0]).toBe('nudge');
    expect(kinds.filter((k) => k === 'check').length).toBe(200);
    // Never more than three nudges in a row: the checks are not starved.
    expect(kinds.join(',')).not.toContain('nudge,nudge,nudge,nudge');
  });

  it('gives a check alone among the scheduled polls their whole share, before history', () => {
    expect(nextTurn(NO_DEFICITS, shares, work({ check: true, history: true })).kind).toBe('check');
    let deficits = NO_DEFICITS;
    const kinds: Array<TurnKind | null> = [];
    for (let i = 0; i < 75; i++) {
      const choice = nextTurn(deficits, shares, work({ check: true, history: true }));
      deficits = choice.deficits;
      kinds.push(choice.kind);
    }
    expect(kinds.filter((k) => k === 'check').length).toBe(50);
  });
});
