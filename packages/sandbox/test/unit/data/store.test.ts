import { describe, expect, it } from 'vitest';
import { CallStore, UnknownLocationError } from '../../../src/data/store.js';

const LOC = '11111111-1111-4111-8111-111111111111';

function store(): CallStore {
  const s = new CallStore();
  s.addLocation(LOC, '+15550000001', []);
  return s;
}

describe('CallStore', () => {
  it('adds a call stamped with now and lists it in the truth', () => {
    const s = store();
    const r = s.upsert({ locationUid: LOC }, 1_000);
    expect(r.updatedAtMs).toBe(1_000);
    expect(r.locationPhoneNumber).toBe('+15550000001');
    expect(s.truth(LOC).map((c) => c.uid)).toEqual([r.uid]);
  });

  it('re-indexes a call whose updatedAt changes', () => {
    const s = store();
    const a = s.upsert({ locationUid: LOC, updatedAt: 10 }, 0);
    const b = s.upsert({ locationUid: LOC, updatedAt: 20 }, 0);
    s.upsert({ uid: a.uid }, 30);
    expect(s.truth(LOC).map((c) => c.uid)).toEqual([b.uid, a.uid]);
  });

  it('keeps third-party calls out of the index and unrepresentable ones out of the truth', () => {
    const s = store();
    const tp = s.upsert({ locationUid: LOC, thirdParty: true }, 1);
    const un = s.upsert({ locationUid: LOC, representable: false }, 2);
    expect(
      s
        .index(LOC)
        ?.toArray()
        .map((r) => r.uid),
    ).toEqual([un.uid]);
    expect(s.truth(LOC)).toEqual([]);
    expect(s.get(tp.uid)).toBe(tp);
    s.upsert({ uid: tp.uid, thirdParty: false }, 3);
    expect(s.truth(LOC).map((c) => c.uid)).toEqual([tp.uid]);
  });

  it('refuses unknown locations, moves between locations and bad dates', () => {
    const s = store();
    expect(() => s.upsert({ locationUid: '22222222-2222-4222-8222-222222222222' }, 0)).toThrow(
      UnknownLocationError,
    );
    expect(() => s.upsert({}, 0)).toThrow(RangeError);
    const r = s.upsert({ locationUid: LOC }, 0);
    expect(() => s.upsert({ uid: r.uid, locationUid: '22222222-2222-4222-8222-222222222222' }, 0)).toThrow(
      RangeError,
    );
    expect(() => s.upsert({ locationUid: LOC, updatedAt: 'soon' }, 0)).toThrow(RangeError);
  });
});
