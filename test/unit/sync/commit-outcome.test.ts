import { describe, expect, it } from 'vitest';
import { isBehind, outcomeUnknown, readBack } from '../../../src/sync/commit-outcome.js';
import { RetriableError } from '../../../src/errors/index.js';
import type { LocationOffset } from '../../../src/sync/model.js';

const at = (watermark: string | null, cursor: string | null = null): LocationOffset => ({
  since: watermark,
  cursor,
  watermark,
  boundary: [],
});

const o1 = at('2024-05-01T10:00:00Z', 'c1');
const o2 = at('2024-05-01T11:00:00Z', 'c2');
const o0 = at('2024-05-01T09:00:00Z');

describe('readBack', () => {
  it('takes the committed offset for a rejected page and the pending one for a stored page', () => {
    expect(readBack(o1, o1, o2, false)).toBe('rejected');
    expect(readBack(o2, o1, o2, false)).toBe('stored');
  });

  it('takes a page that leaves the offset unchanged for rejected: the store cannot tell it went through', () => {
    expect(readBack(o1, o1, o1, false)).toBe('rejected');
  });

  it('never adopts an offset behind the committed one, even after the producer initialised again', () => {
    expect(readBack(o0, o1, o2, false)).toBe('unrecognised');
    expect(readBack(o0, o1, o2, true)).toBe('unrecognised');
    expect(readBack(at(null), o1, null, true)).toBe('unrecognised');
  });

  it('adopts another, newer offset only when read after the producer initialised again', () => {
    const newer = at('2024-05-01T12:00:00Z');
    expect(readBack(newer, o1, null, false)).toBe('unrecognised');
    expect(readBack(newer, o1, null, true)).toBe('superseded');
  });
});

describe('isBehind', () => {
  it('compares watermarks as instants', () => {
    expect(isBehind(at('2024-05-01T10:00:00+01:00'), at('2024-05-01T09:30:00Z'))).toBe(true);
    expect(isBehind(at('2024-05-01T10:00:00Z'), at('2024-05-01T10:00:00Z', 'x'))).toBe(false);
    expect(isBehind(at(null), at(null))).toBe(false);
  });
});

describe('outcomeUnknown', () => {
  it('holds only for a rejection that says so', () => {
    expect(
      outcomeUnknown(
        new RetriableError('KAFKA_COMMIT_OUTCOME_UNKNOWN', 'x', { details: { outcomeUnknown: true } }),
      ),
    ).toBe(true);
    expect(outcomeUnknown(new RetriableError('KAFKA_TRANSACTION_ABORTED', 'x'))).toBe(false);
    expect(outcomeUnknown(new Error('x'))).toBe(false);
  });
});
