import { describe, expect, it } from 'vitest';
import {
  listedCallJson,
  type CallRecord,
  toListedCall,
  toSingleCall,
} from '../../../src/data/call-record.js';
import { generateData, resolveDataOptions } from '../../../src/data/generator.js';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('generateData', () => {
  it('produces the same locations and calls for the same seed', () => {
    const a = generateData({ seed: 5, locations: 3, callsPerLocation: 50 });
    const b = generateData({ seed: 5, locations: 3, callsPerLocation: 50 });
    expect(b.locations).toEqual(a.locations);
    for (const l of a.locations) expect(b.truth(l).map(toSingleCall)).toEqual(a.truth(l).map(toSingleCall));
  });

  it('produces other data for another seed', () => {
    const a = generateData({ seed: 5, locations: 2, callsPerLocation: 10 });
    const b = generateData({ seed: 6, locations: 2, callsPerLocation: 10 });
    expect(b.locations).not.toEqual(a.locations);
  });

  it('makes uuid v4 identifiers and E.164-like phone numbers', () => {
    const store = generateData({ seed: 1, locations: 2, callsPerLocation: 20 });
    for (const l of store.locations) {
      expect(l).toMatch(UUID_V4);
      for (const c of store.truth(l)) {
        expect(c.uid).toMatch(UUID_V4);
        expect(c.locationPhoneNumber).toMatch(/^\+1555\d{7}$/);
        expect(c.customerPhoneNumber).toMatch(/^\+1\d{10}$/);
        expect(c.startedAtMs).toBeLessThanOrEqual(c.endedAtMs);
        expect(c.endedAtMs).toBeLessThanOrEqual(c.updatedAtMs);
      }
    }
  });

  it('mixes private, third-party and unrepresentable calls at about the asked ratios', () => {
    const store = generateData({
      seed: 2,
      locations: 1,
      callsPerLocation: 5000,
      privateRatio: 0.3,
      thirdPartyRatio: 0.1,
      unrepresentableRatio: 0.05,
      sameInstantGroups: { count: 0, size: 0 },
    });
    const location = store.locations[0] as string;
    const listable = store.index(location)?.toArray() ?? [];
    const thirdParty = 5000 - listable.length;
    const unrepresentable = listable.filter((r) => !r.representable).length;
    const isPrivate = listable.filter((r) => r.isPrivate).length;
    expect(thirdParty / 5000).toBeCloseTo(0.1, 1);
    expect(unrepresentable / listable.length).toBeCloseTo(0.05, 1);
    expect(isPrivate / listable.length).toBeCloseTo(0.3, 1);
    expect(store.truth(location)).toHaveLength(listable.length - unrepresentable);
  });

  it('builds groups of calls sharing one updatedAt, larger than a page', () => {
    const store = generateData({
      seed: 3,
      locations: 1,
      callsPerLocation: 500,
      thirdPartyRatio: 0,
      unrepresentableRatio: 0,
      sameInstantGroups: { count: 2, size: 130 },
    });
    const counts = new Map<number, number>();
    for (const r of store.index(store.locations[0] as string)?.toArray() ?? [])
      counts.set(r.updatedAtMs, (counts.get(r.updatedAtMs) ?? 0) + 1);
    expect([...counts.values()].filter((n) => n >= 130)).toHaveLength(2);
  });

  it('keeps every location index in (updatedAt, uid) order', () => {
    const store = generateData({ seed: 4, locations: 2, callsPerLocation: 300 });
    for (const l of store.locations) {
      const records = store.index(l)?.toArray() ?? [];
      for (let i = 1; i < records.length; i++) {
        const [p, c] = [records[i - 1], records[i]];
        expect(
          p && c && (p.updatedAtMs < c.updatedAtMs || (p.updatedAtMs === c.updatedAtMs && p.uid < c.uid)),
        ).toBe(true);
      }
    }
  });

  it('rejects ratios outside 0..1 and non-integer counts', () => {
    expect(() => resolveDataOptions({ privateRatio: 1.5 })).toThrow(RangeError);
    expect(() => resolveDataOptions({ locations: 0 })).toThrow(RangeError);
    expect(() => resolveDataOptions({ callsPerLocation: 2.5 })).toThrow(RangeError);
  });
});

describe('listed item JSON', () => {
  it('is exactly JSON.stringify of the listed call, quotes and all', () => {
    const store = generateData({ seed: 9, locations: 1, callsPerLocation: 20 });
    const records = store.index(store.locations[0] as string)?.toArray() ?? [];
    const [first, second] = records as [CallRecord, CallRecord];
    first.customerPhoneNumber = 'odd "value" \\ \n';
    second.customerPhoneNumber = null;
    for (const r of records) expect(listedCallJson(r)).toBe(JSON.stringify(toListedCall(r)));
  });
});
