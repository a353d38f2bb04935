import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor, type CursorPayload } from '../../../src/listing/cursor.js';

const key = Buffer.alloc(32, 7);
const asc: CursorPayload = {
  locationUid: '11111111-1111-4111-8111-111111111111',
  sinceMs: 1_700_000_000_000,
  order: 'asc',
  after: { ms: 1_700_000_000_123, uid: 'abc' },
  expiresAtMs: 2_000,
};

describe('listing cursor codec', () => {
  it('round-trips since, order, locationUid and the position', () => {
    expect(decodeCursor(encodeCursor(asc, key), key, 1_000)).toEqual({ ok: true, payload: asc });
    const desc: CursorPayload = {
      locationUid: null,
      sinceMs: null,
      order: 'desc',
      offset: 40,
      expiresAtMs: 2_000,
    };
    expect(decodeCursor(encodeCursor(desc, key), key, 1_000)).toEqual({ ok: true, payload: desc });
  });

  it('is opaque text safe in a query string', () => {
    expect(encodeCursor(asc, key)).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
  });

  it('detects any change to the payload or the signature', () => {
    const cursor = encodeCursor(asc, key);
    const [body, mac] = cursor.split('.') as [string, string];
    const changed = Buffer.from(
      JSON.stringify({ ...JSON.parse(Buffer.from(body, 'base64url').toString()), o: 'desc' }),
    ).toString('base64url');
    expect(decodeCursor(`${changed}.${mac}`, key, 0)).toEqual({ ok: false, reason: 'bad_signature' });
    expect(decodeCursor(`${body}.${mac.slice(0, -2)}AA`, key, 0)).toEqual({
      ok: false,
      reason: 'bad_signature',
    });
    expect(decodeCursor(cursor, Buffer.alloc(32, 8), 0)).toEqual({ ok: false, reason: 'bad_signature' });
  });

  it('calls garbage malformed', () => {
    for (const junk of ['', 'abc', 'a.b.c', 'a b.c', '%%%.###'])
      expect(decodeCursor(junk, key, 0)).toMatchObject({ ok: false, reason: 'malformed' });
  });

  it('expires after expiresAtMs', () => {
    const cursor = encodeCursor(asc, key);
    expect(decodeCursor(cursor, key, 2_000).ok).toBe(true);
    expect(decodeCursor(cursor, key, 2_001)).toEqual({ ok: false, reason: 'expired' });
  });
});
