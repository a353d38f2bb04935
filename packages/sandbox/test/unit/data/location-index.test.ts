import { describe, expect, it } from 'vitest';
import type { CallRecord } from '../../../src/data/call-record.js';
import { callRecord } from '../call-fixture.js';
import { LocationIndex } from '../../../src/data/location-index.js';

const rec = callRecord;

const keys = (index: LocationIndex): string[] => index.toArray().map((r) => `${r.updatedAtMs}:${r.uid}`);

describe('LocationIndex', () => {
  const sorted = (): LocationIndex =>
    new LocationIndex([rec('a', 10), rec('b', 20), rec('c', 20), rec('d', 20), rec('e', 30)]);

  it('finds the first record at or after an instant with lowerBound(ms, "")', () => {
    const index = sorted();
    expect(index.lowerBound(20, '')).toBe(1);
    expect(index.lowerBound(21, '')).toBe(4);
    expect(index.lowerBound(5, '')).toBe(0);
    expect(index.lowerBound(31, '')).toBe(5);
  });

  it('finds the first record strictly after a key with upperBound, ties broken by uid', () => {
    const index = sorted();
    expect(index.upperBound(20, 'b')).toBe(2);
    expect(index.upperBound(20, 'bb')).toBe(2);
    expect(index.upperBound(20, 'd')).toBe(4);
    expect(index.upperBound(30, 'e')).toBe(5);
  });

  it('keeps (updatedAt, uid) order on insert, appending when the key is the largest', () => {
    const index = sorted();
    index.insert(rec('bb', 20));
    index.insert(rec('z', 5));
    index.insert(rec('f', 40));
    expect(keys(index)).toEqual(['5:z', '10:a', '20:b', '20:bb', '20:c', '20:d', '30:e', '40:f']);
  });

  it('removes a record found by its current key, and only that record', () => {
    const index = sorted();
    const c = index.at(2) as CallRecord;
    expect(index.remove(c)).toBe(true);
    expect(keys(index)).toEqual(['10:a', '20:b', '20:d', '30:e']);
    expect(index.remove(rec('c', 20))).toBe(false);
    expect(index.size).toBe(4);
  });
});
