import { describe, expect, it } from 'vitest';
import { OldestFirstMap } from '../../../src/webhooks/oldest-first-map.js';

/** Every key, oldest first (the map is emptied). */
const drain = (map: OldestFirstMap<string, number>): string[] => {
  const kept: string[] = [];
  map.dropOldestWhile((_value, key) => {
    kept.push(key);
    return true;
  });
  return kept;
};

describe('OldestFirstMap', () => {
  it('evicts the oldest entries once over capacity, and says how many', () => {
    const map = new OldestFirstMap<string, number>(2);
    expect(map.set('a', 1)).toBe(0);
    expect(map.set('b', 2)).toBe(0);
    expect(map.set('c', 3)).toBe(1);
    expect([map.has('a'), map.get('b'), map.get('c'), map.size]).toEqual([false, 2, 3, 2]);
  });

  it('makes a key set again the newest, so the other goes first', () => {
    const map = new OldestFirstMap<string, number>(2);
    map.set('a', 1);
    map.set('b', 2);
    map.set('a', 3);
    map.set('c', 4);
    expect([map.get('a'), map.has('b'), map.get('c')]).toEqual([3, false, 4]);
  });

  it('keeps a read in place with get, and moves it to the back with touch (least recently used first)', () => {
    const filled = () => {
      const map = new OldestFirstMap<string, number>(3);
      for (const [i, key] of ['a', 'b', 'c'].entries()) map.set(key, i);
      return map;
    };
    const read = filled();
    expect(read.get('a')).toBe(0);
    expect(drain(read)).toEqual(['a', 'b', 'c']);
    const touched = filled();
    expect(touched.touch('a')).toBe(0);
    expect(touched.touch('missing')).toBeUndefined();
    expect(drain(touched)).toEqual(['b', 'c', 'a']);
  });

  it('drops from the front only while the entries are expired, and says how many', () => {
    const map = new OldestFirstMap<string, number>(10);
    map.set('a', 100);
    map.set('b', 200);
    map.set('c', 150);
    // c would be expired too, but b before it is not: the front is where expiry stops.
    expect(map.dropOldestWhile((at) => at <= 150)).toBe(1);
    expect([map.has('a'), map.has('b'), map.has('c')]).toEqual([false, true, true]);
    expect(map.delete('c')).toBe(true);
    expect(map.size).toBe(1);
  });

  it('refuses a capacity below one', () => {
    expect(() => new OldestFirstMap(0)).toThrow(RangeError);
    expect(() => new OldestFirstMap(1.5)).toThrow(RangeError);
  });
});
