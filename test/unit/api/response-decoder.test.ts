import { describe, expect, it } from 'vitest';
import { decodeCallBody, decodeListPage } from '../../../src/api/response-decoder.js';

const fields = { itemsField: 'data', nextCursorField: 'metadata.nextCursor' };

describe('decodeListPage', () => {
  it('reads items and the cursor from the configured paths', () => {
    expect(decodeListPage({ data: [{ uid: 'a' }], metadata: { nextCursor: 'c1' } }, fields)).toEqual({
      ok: true,
      value: { items: [{ uid: 'a' }], nextCursor: 'c1' },
    });
  });

  it('calls a page malformed when its cursor is longer than the offset record may keep', () => {
    const decoded = decodeListPage({ data: [], metadata: { nextCursor: 'c'.repeat(1_000_000) } }, fields);
    expect(decoded).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/1000000 characters/) as unknown,
    });
  });

  it('falls back to a top-level nextCursor', () => {
    expect(decodeListPage({ data: [], nextCursor: 'c2' }, fields)).toEqual({
      ok: true,
      value: { items: [], nextCursor: 'c2' },
    });
  });

  it('reads a null or empty cursor as the end', () => {
    expect(decodeListPage({ data: [], metadata: { nextCursor: null } }, fields)).toMatchObject({
      value: { nextCursor: null },
    });
    expect(decodeListPage({ data: [], metadata: { nextCursor: '' } }, fields)).toMatchObject({
      value: { nextCursor: null },
    });
  });

  it('calls a body without items array or cursor malformed', () => {
    expect(decodeListPage([], fields).ok).toBe(false);
    expect(decodeListPage({ data: {}, metadata: { nextCursor: null } }, fields).ok).toBe(false);
    expect(decodeListPage({ data: [] }, fields).ok).toBe(false);
    expect(decodeListPage({ data: [], metadata: { nextCursor: 7 } }, fields).ok).toBe(false);
  });
});

describe('decodeCallBody', () => {
  it('reads the call at callField, or the body itself when the field is absent', () => {
    expect(decodeCallBody({ data: { uid: 'a' } }, 'data')).toEqual({ ok: true, value: { uid: 'a' } });
    expect(decodeCallBody({ uid: 'a' }, 'data')).toEqual({ ok: true, value: { uid: 'a' } });
  });

  it('calls a present but non-object call field malformed', () => {
    expect(decodeCallBody({ data: null }, 'data').ok).toBe(false);
    expect(decodeCallBody('x', 'data').ok).toBe(false);
  });
});
