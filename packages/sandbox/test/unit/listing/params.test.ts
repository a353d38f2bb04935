import { describe, expect, it } from 'vitest';
import { parseDateTime, parseListingParams } from '../../../src/listing/params.js';

const parse = (qs: string): ReturnType<typeof parseListingParams> =>
  parseListingParams(new URLSearchParams(qs));

describe('listing parameters', () => {
  it('defaults to limit 10, order asc, no since, no location', () => {
    expect(parse('')).toEqual({
      ok: true,
      params: { cursor: null, limit: 10, locationUid: null, order: 'asc', sinceMs: null },
    });
  });

  it('accepts limit 0 to 100 and nothing else', () => {
    expect(parse('limit=0')).toMatchObject({ ok: true, params: { limit: 0 } });
    expect(parse('limit=100')).toMatchObject({ ok: true, params: { limit: 100 } });
    for (const bad of ['101', '-1', '1e2', '10.0', '', 'x', '0100'])
      expect(parse(`limit=${bad}`).ok, bad).toBe(false);
  });

  it('accepts asc and desc only', () => {
    expect(parse('order=desc')).toMatchObject({ ok: true, params: { order: 'desc' } });
    expect(parse('order=DESC').ok).toBe(false);
  });

  it('requires a uuid locationUid and lower-cases it', () => {
    expect(parse('locationUid=AAAAAAAA-1111-4111-8111-111111111111')).toMatchObject({
      ok: true,
      params: { locationUid: 'aaaaaaaa-1111-4111-8111-111111111111' },
    });
    expect(parse('locationUid=123').ok).toBe(false);
  });

  it('ignores since, order and locationUid next to a cursor, but not limit', () => {
    expect(parse('cursor=abc&since=nonsense&order=sideways&locationUid=x&limit=5')).toEqual({
      ok: true,
      params: { cursor: 'abc', limit: 5, locationUid: null, order: 'asc', sinceMs: null },
    });
    expect(parse('cursor=abc&limit=500').ok).toBe(false);
  });

  it('refuses a parameter given twice', () => {
    expect(parse('limit=1&limit=2').ok).toBe(false);
  });
});

describe('parseDateTime', () => {
  it('reads RFC 3339 date-times with Z or an offset', () => {
    expect(parseDateTime('2026-01-02T03:04:05Z')).toBe(Date.UTC(2026, 0, 2, 3, 4, 5));
    expect(parseDateTime('2026-01-02T05:04:05.250+02:00')).toBe(Date.UTC(2026, 0, 2, 3, 4, 5, 250));
  });

  it('rounds sub-millisecond fractions up so that updatedAt >= since stays exact', () => {
    const ms = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
    expect(parseDateTime('2026-01-02T03:04:05.678000Z')).toBe(ms);
    expect(parseDateTime('2026-01-02T03:04:05.678001Z')).toBe(ms + 1);
  });

  it('refuses dates that are not date-times', () => {
    for (const bad of [
      '2026-01-02',
      '2026-01-02 03:04:05Z',
      '2026-13-01T00:00:00Z',
      '2026-01-02T03:04:05',
      'yesterday',
    ]) {
      expect(parseDateTime(bad), bad).toBeNull();
    }
  });
});
