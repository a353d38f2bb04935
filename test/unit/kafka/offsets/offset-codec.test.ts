import { describe, expect, it } from 'vitest';
import { FatalError } from '../../../../src/errors/index.js';
import {
  decodeOffsetValue,
  encodeOffsetValue,
  offsetKey,
  parseOffsetKey,
} from '../../../../src/kafka/offsets/offset-codec.js';
import type { LocationOffset } from '../../../../src/sync/model.js';

const offset: LocationOffset = {
  since: '2024-05-01T00:00:00Z',
  cursor: 'abc',
  watermark: '2024-05-01T10:00:00.5Z',
  boundary: ['u1', 'u2'],
};

describe('offset key', () => {
  it('is connector name and location uid joined by a slash, and splits back', () => {
    const key = offsetKey('my.connector', '00000000-0000-4000-8000-000000000001');
    expect(key).toBe('my.connector/00000000-0000-4000-8000-000000000001');
    expect(parseOffsetKey(key)).toEqual({
      connectorName: 'my.connector',
      locationUid: '00000000-0000-4000-8000-000000000001',
    });
  });

  it('is not parsed when it has no connector or location part', () => {
    expect(parseOffsetKey('no-slash')).toBeUndefined();
    expect(parseOffsetKey('/loc')).toBeUndefined();
    expect(parseOffsetKey('conn/')).toBeUndefined();
  });
});

describe('offset value', () => {
  it('round-trips through versioned JSON', () => {
    const text = encodeOffsetValue(offset);
    expect(JSON.parse(text)).toEqual({ version: 2, ...offset });
    expect(decodeOffsetValue('k', text)).toEqual(offset);
    expect(decodeOffsetValue('k', Buffer.from(text))).toEqual(offset);
  });

  it('keeps boundaryOverflow only when set', () => {
    expect(JSON.parse(encodeOffsetValue({ ...offset, boundaryOverflow: false }))).not.toHaveProperty(
      'boundaryOverflow',
    );
    expect(decodeOffsetValue('k', encodeOffsetValue({ ...offset, boundaryOverflow: true }))).toEqual({
      ...offset,
      boundaryOverflow: true,
    });
  });

  it('keeps the signal a location carried out and the backfill its history lane reads for', () => {
    const backfilling: LocationOffset = {
      ...offset,
      signal: 'sig-2',
      history: { ...offset, cursor: null, until: '2024-05-02T00:00:00Z', signal: 'sig-2' },
    };
    expect(decodeOffsetValue('k', encodeOffsetValue(backfilling))).toEqual(backfilling);
    const reset: LocationOffset = { ...offset, signal: 'sig-1' };
    expect(decodeOffsetValue('k', encodeOffsetValue(reset))).toEqual(reset);
    expect(JSON.parse(encodeOffsetValue(offset))).not.toHaveProperty('signal');
  });

  it('reads a tombstone as no offset', () => {
    expect(decodeOffsetValue('k', null)).toBeNull();
  });

  it('ignores fields a later minor change may add', () => {
    expect(decodeOffsetValue('k', JSON.stringify({ version: 2, ...offset, note: 'x' }))).toEqual(offset);
  });

  it('writes version 2 with the fingerprint of each boundary uid, and reads it back', () => {
    const withFingerprints = { ...offset, boundaryFingerprints: { u1: 'F1', u2: 'F2' } };
    const text = encodeOffsetValue(withFingerprints);
    expect(JSON.parse(text)).toEqual({ version: 2, ...withFingerprints });
    expect(decodeOffsetValue('k', text)).toEqual(withFingerprints);
  });

  it('still reads version 1, whose boundary uids have no fingerprint (published once more, never skipped)', () => {
    const v1 = JSON.stringify({ version: 1, ...offset, boundaryFingerprints: { u1: 'ignored' } });
    expect(decodeOffsetValue('k', v1)).toEqual(offset);
  });

  it('drops fingerprints of uids that are not in the boundary', () => {
    const text = JSON.stringify({ version: 2, ...offset, boundaryFingerprints: { u1: 'F1', gone: 'G' } });
    expect(decodeOffsetValue('k', text)).toEqual({ ...offset, boundaryFingerprints: { u1: 'F1' } });
  });

  it('refuses unreadable values with a fatal error that names the key and the way out', () => {
    for (const [value, reason] of [
      ['not json', 'not JSON'],
      [JSON.stringify({ version: 4, ...offset }), 'format version 4'],
      [JSON.stringify({ version: 2, ...offset, history: { ...offset, until: offset.since } }), 'history'],
      [JSON.stringify({ version: 3, ...offset, history: { ...offset, until: 'soon' } }), 'history.until'],
      [JSON.stringify({ version: 3, ...offset, history: { since: null } }), 'history.cursor'],
      [JSON.stringify({ version: 1, since: null }), 'cursor'],
    ] as const) {
      let thrown: unknown;
      try {
        decodeOffsetValue('conn/loc', value);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(FatalError);
      expect((thrown as FatalError).code).toBe('OFFSET_UNREADABLE');
      expect((thrown as FatalError).message).toContain('conn/loc');
      expect((thrown as FatalError).message).toContain(reason);
      expect((thrown as FatalError).message).toContain('offsets reset');
    }
  });

  it('writes a split location as version 3, its history lane beside the live one, and reads both back', () => {
    const split: LocationOffset = {
      since: '2024-05-02T00:00:00Z',
      cursor: null,
      watermark: '2024-05-02T00:00:01Z',
      boundary: ['u9'],
      boundaryFingerprints: { u9: 'f9' },
      history: { ...offset, boundaryFingerprints: { u1: 'f1' }, until: '2024-05-02T00:00:00Z' },
    };
    const text = encodeOffsetValue(split);
    expect(JSON.parse(text)).toEqual({ version: 3, ...split });
    expect(decodeOffsetValue('k', text)).toEqual(split);
  });

  it('writes a location that is not split as version 2, readable by the release before lanes', () => {
    expect(JSON.parse(encodeOffsetValue(offset))).toMatchObject({ version: 2 });
  });

  it('reads a version 2 offset as the live lane alone, with no history', () => {
    expect(decodeOffsetValue('k', JSON.stringify({ version: 2, ...offset }))).not.toHaveProperty('history');
  });
});
