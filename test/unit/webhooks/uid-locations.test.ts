import { describe, expect, it } from 'vitest';
import { LruUidLocations } from '../../../src/webhooks/uid-locations.js';

describe('the uid → location index', () => {
  it('answers the location a uid was last published for', () => {
    const index = new LruUidLocations(10);
    index.recordPublished('c1', 'L1');
    expect(index.locationOf('c1')).toBe('L1');
    expect(index.locationOf('c2')).toBeUndefined();
  });

  it('holds at most its capacity, dropping the least recently used uid', () => {
    const index = new LruUidLocations(2);
    index.recordPublished('c1', 'L1');
    index.recordPublished('c2', 'L2');
    index.locationOf('c1'); // c1 used: c2 is now the least recently used
    index.recordPublished('c3', 'L3');
    expect(index.size).toBe(2);
    expect(index.locationOf('c2')).toBeUndefined();
    expect(index.locationOf('c1')).toBe('L1');
    expect(index.locationOf('c3')).toBe('L3');
  });

  it('keeps one entry per uid, the latest location', () => {
    const index = new LruUidLocations(2);
    index.recordPublished('c1', 'L1');
    index.recordPublished('c1', 'L9');
    expect(index.size).toBe(1);
    expect(index.locationOf('c1')).toBe('L9');
  });

  it('refuses a capacity below one', () => {
    expect(() => new LruUidLocations(0)).toThrow(RangeError);
  });
});
