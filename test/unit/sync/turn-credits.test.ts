import { describe, expect, it } from 'vitest';
import { TurnCredits } from '../../../src/sync/turn-credits.js';

describe('TurnCredits', () => {
  it('gives history its share of the turns while both kinds wait', () => {
    const credits = new TurnCredits(0.25, 8);
    const kinds = Array.from({ length: 8 }, () =>
      credits.turnFor({ live: true, history: true, historyTurns: 0 }),
    );
    expect(kinds.filter((k) => k === 'history')).toHaveLength(2);
    expect(credits.shares).toEqual({ live: 0.75, history: 0.25 });
  });

  it('keeps no credit from an answer that is not the kind asked to keep', () => {
    const kept = new TurnCredits(0.5, 8);
    const asked = new TurnCredits(0.5, 8);
    const work = { live: true, history: true, historyTurns: 0 };
    // A history turn asking whether it goes on, told live: nothing charged.
    expect(asked.turnFor(work, 'history')).toBe('live');
    expect([asked.turnFor(work), asked.turnFor(work)]).toEqual([kept.turnFor(work), kept.turnFor(work)]);
  });
});
