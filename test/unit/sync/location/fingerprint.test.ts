import { createHash } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { BoundaryFingerprints, REMEMBERED_CALLS } from '../../../../src/sync/location/fingerprint.js';

const listed = {
  uid: 'a',
  locationUid: 'L',
  updatedAt: '2024-03-01T12:00:00Z',
  locationPhoneNumber: '+1',
  customerPhoneNumber: '+2',
  isPrivate: null,
};
const fingerprints = BoundaryFingerprints.fromSecret('client-secret');

describe('BoundaryFingerprints.fields', () => {
  it('is the same for the same fields in any key order', () => {
    const reordered = Object.fromEntries(Object.entries(listed).reverse());
    expect(fingerprints.fields(reordered)).toBe(fingerprints.fields(listed));
  });

  it('ignores how updatedAt is spelled (the boundary compares one instant only)', () => {
    expect(fingerprints.fields({ ...listed, updatedAt: '2024-03-01T13:00:00.000+01:00' })).toBe(
      fingerprints.fields(listed),
    );
  });

  it('changes when any other listed field changes', () => {
    const base = fingerprints.fields(listed);
    expect(fingerprints.fields({ ...listed, customerPhoneNumber: '+3' })).not.toBe(base);
    expect(fingerprints.fields({ ...listed, locationPhoneNumber: null })).not.toBe(base);
    expect(fingerprints.fields({ ...listed, isPrivate: false })).not.toBe(base);
  });

  it('is short and holds none of the fields in clear', () => {
    expect(fingerprints.fields(listed)).toMatch(/^[A-Za-z0-9_-]{16}$/);
    expect(fingerprints.text('+15551234567')).not.toContain('555');
  });
});

describe('BoundaryFingerprints remembered', () => {
  it("makes no second HMAC for a call listed again with the same fields (an idle poll's boundary call)", () => {
    const fresh = BoundaryFingerprints.fromSecret('client-secret');
    const hmac = vi.spyOn(fresh, 'text');
    const first = fresh.fields(listed);
    expect(fresh.fields({ ...listed, updatedAt: '2024-03-01T12:00:00.000Z' })).toBe(first);
    expect(hmac).toHaveBeenCalledTimes(1);
    expect(first).toBe(fingerprints.fields(listed));
  });

  it("gives a call's new version its own fingerprint, and its old version the old one again", () => {
    const fresh = BoundaryFingerprints.fromSecret('client-secret');
    const old = fresh.fields(listed);
    const changed = fresh.fields({ ...listed, customerPhoneNumber: '+3' });
    expect(changed).not.toBe(old);
    expect(changed).toBe(fingerprints.fields({ ...listed, customerPhoneNumber: '+3' }));
    expect(fresh.fields(listed)).toBe(old);
  });

  it('remembers a bounded number of calls, forgetting the least recently used first', () => {
    const fresh = BoundaryFingerprints.fromSecret('client-secret');
    fresh.fields(listed);
    for (let i = 0; i < REMEMBERED_CALLS; i++) fresh.fields({ ...listed, uid: `other-${i}` });
    const hmac = vi.spyOn(fresh, 'text');
    fresh.fields({ ...listed, uid: `other-${REMEMBERED_CALLS - 1}` });
    expect(hmac).toHaveBeenCalledTimes(0);
    expect(fresh.fields(listed)).toBe(fingerprints.fields(listed));
    expect(hmac).toHaveBeenCalledTimes(1);
  });
});

describe('BoundaryFingerprints keys', () => {
  it('gives every instance holding the same secret the same fingerprints (a new owner recognises the boundary)', () => {
    expect(BoundaryFingerprints.fromSecret('client-secret').fields(listed)).toBe(fingerprints.fields(listed));
  });

  it('gives other fingerprints under another secret', () => {
    expect(BoundaryFingerprints.fromSecret('rotated-secret').fields(listed)).not.toBe(
      fingerprints.fields(listed),
    );
  });

  it('cannot be matched by hashing guessed customer numbers without the key (the offsets topic leaks no number)', () => {
    // The attack a plain hash allowed: the other fields are in the calls topic, so try every number.
    const stored = fingerprints.fields(listed);
    const plain = (number: string) => {
      const fields: Record<string, unknown> = { ...listed, customerPhoneNumber: number };
      const keys = Object.keys(fields)
        .filter((key) => key !== 'updatedAt')
        .sort();
      const text = JSON.stringify(keys.map((key) => [key, fields[key] ?? null]));
      return createHash('sha256').update(text).digest().subarray(0, 12).toString('base64url');
    };
    const guesses = ['+0', '+1', '+2', '+3', '+4'].map(plain);
    expect(guesses).not.toContain(stored);
  });

  it('refuses an empty secret (no key is not a key)', () => {
    expect(() => BoundaryFingerprints.fromSecret('')).toThrow(TypeError);
  });
});
