import { describe, expect, it } from 'vitest';
import { heldLocationsChange } from '../../../src/runtime/held-locations-change.js';

describe('heldLocationsChange', () => {
  it('removes what a held partition no longer lists, adds what it newly lists, and takes over a partition without a sink', () => {
    const held = new Map([
      [0, { hasSink: true, uids: ['a', 'b'] }],
      [1, { hasSink: false, uids: [] }],
      [2, { hasSink: true, uids: ['c'] }],
    ]);
    const listed = new Map<number, readonly string[]>([
      [0, ['b', 'd']],
      [1, ['e']],
      [2, ['c']],
      [3, ['f']],
    ]);
    const change = heldLocationsChange(held, listed);
    expect(change.removed).toEqual(['a']);
    expect([...change.adding]).toEqual([[0, ['d']]]);
    expect(change.takeOver).toEqual([1]);
  });
});
