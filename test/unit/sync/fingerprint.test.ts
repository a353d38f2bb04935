import { describe, expect, it } from 'vitest';
import { fingerprintFields, fingerprintText } from '../../../src/sync/fingerprint.js';

const listed = {
  uid: 'a',
  locationUid: 'L',
  updatedAt: '2024-03-01T12:00:00Z',
  locationPhoneNumber: '+1',
  customerPhoneNumber: '+2',
  isPrivate: null,
};

describe('fingerprintFields', () => {
  it('is the same for the same fields in any key order', () => {
    const reordered = Object.fromEntries(Object.entries(listed).reverse());
    expect(fingerprintFields(reordered)).toBe(fingerprintFields(listed));
  });

  it('ignores how updatedAt is spelled (the boundary compares one instant only)', () => {
    expect(fingerprintFields({ ...listed, updatedAt: '2024-03-01T13:00:00.000+01:00' })).toBe(
      fingerprintFields(listed),
    );
  });

  it('changes when any other listed field changes', () => {
    const base = fingerprintFields(listed);
    expect(fingerprintFields({ ...listed, customerPhoneNumber: '+3' })).not.toBe(base);
    expect(fingerprintFields({ ...listed, locationPhoneNumber: null })).not.toBe(base);
    expect(fingerprintFields({ ...listed, isPrivate: false })).not.toBe(base);
  });

  it('is short and holds none of the fields in clear', () => {
    const fingerprint = fingerprintFields(listed);
    expect(fingerprint).toMatch(/^[A-Za-z0-9_-]{16}$/);
    expect(fingerprintText('+15551234567')).not.toContain('555');
  });
});
