import { describe, expect, it } from 'vitest';
import { TurnCredits } from '../../../../src/sync/scheduler/turn.js';

const waiting = { nudge: false, live: true, history: true, historyTurns: 0 };

describe('TurnCredits', () => {
  it('gives history its share of the turns while both kinds wait', () => {
    const credits = new TurnCredits({ history: 0.25, nudge: 0 }, 8);
    const kinds = Array.from({ length: 8 }, () => credits.turnFor(waiting));
    expect(kinds.filter((k) => k === 'history')).toHaveLength(2);
    expect(credits.shares).toMatchObject({ nudge: 0, history: 0.25 });
    expect(credits.shares.live + credits.shares.check).toBeCloseTo(0.75);
  });

  it('gives nudged polls their share while all three kinds wait', () => {
    const credits = new TurnCredits({ history: 0.25, nudge: 0.25 }, 8);
    const kinds = Array.from({ length: 8 }, () => credits.turnFor({ ...waiting, nudge: true }));
    expect(kinds.filter((k) => k === 'nudge')).toHaveLength(2);
    expect(kinds.filter((k) => k === 'history')).toHaveLength(2);
  });

  it('keeps no credit from an answer that is not the kind asked to keep', () => {
    const kept = new TurnCredits({ history: 0.5, nudge: 0 }, 8);
    const asked = new TurnCredits({ history: 0.5, nudge: 0 }, 8);
    // A history turn asking whether it goes on, told live: nothing charged.
    expect(asked.turnFor(waiting, 'history')).toBe('live');
    expect([asked.turnFor(waiting), asked.turnFor(waiting)]).toEqual([
      kept.turnFor(waiting),
      kept.turnFor(waiting),
    ]);
  });

  it("gives the stretch rule live's share beside history, with the nudges' idle share lent in proportion", () => {
    expect(new TurnCredits({ history: 0.25, nudge: 0 }, 8).liveShareBesideHistory).toBe(0.75);
    expect(new TurnCredits({ history: 0.25, nudge: 0.25 }, 8).liveShareBesideHistory).toBeCloseTo(2 / 3);
    expect(new TurnCredits({ history: 0, nudge: 1 }, 8).liveShareBesideHistory).toBe(1);
  });
});
