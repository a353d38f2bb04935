import { describe, expect, it } from 'vitest';
import { historySlots, nextTurn } from '../../../src/sync/turn-policy.js';

describe('historySlots', () => {
  it('is half the slots, rounded down, and at least one', () => {
    expect([1, 2, 3, 4, 5, 8].map(historySlots)).toEqual([1, 1, 1, 2, 2, 4]);
  });
});

describe('nextTurn', () => {
  it('gives a worker due live work first, however many history turns run', () => {
    expect(nextTurn({ liveDue: true, historyTurns: 0, maxLocationsInFlight: 4 })).toBe('live');
    expect(nextTurn({ liveDue: true, historyTurns: 2, maxLocationsInFlight: 4 })).toBe('live');
  });

  it('gives a history turn only when no live work is due, while history holds fewer than half the slots', () => {
    expect(nextTurn({ liveDue: false, historyTurns: 0, maxLocationsInFlight: 4 })).toBe('history');
    expect(nextTurn({ liveDue: false, historyTurns: 1, maxLocationsInFlight: 4 })).toBe('history');
    expect(nextTurn({ liveDue: false, historyTurns: 2, maxLocationsInFlight: 4 })).toBeNull();
  });

  it('leaves history one slot even when there is only one', () => {
    expect(nextTurn({ liveDue: false, historyTurns: 0, maxLocationsInFlight: 1 })).toBe('history');
    expect(nextTurn({ liveDue: false, historyTurns: 1, maxLocationsInFlight: 1 })).toBeNull();
  });

  it('lets a history turn, not counting itself, go on until live work is due', () => {
    // A history turn in the last history slot asks with the others only: it goes on while no live work is due.
    expect(nextTurn({ liveDue: false, historyTurns: 1, maxLocationsInFlight: 4 })).toBe('history');
    expect(nextTurn({ liveDue: true, historyTurns: 1, maxLocationsInFlight: 4 })).toBe('live');
  });
});
