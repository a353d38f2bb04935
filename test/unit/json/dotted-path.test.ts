import { describe, expect, it } from 'vitest';
import { readPath } from '../../../src/json/dotted-path.js';

describe('readPath', () => {
  const body = { metadata: { nextCursor: 'c2', total: null }, items: [{ uid: 'a' }] };

  it('reads a value at a dotted path, null included', () => {
    expect(readPath(body, 'metadata.nextCursor')).toBe('c2');
    expect(readPath(body, 'metadata.total')).toBeNull();
  });

  it('answers the body itself for the empty path', () => {
    expect(readPath(body, '')).toBe(body);
  });

  it('answers undefined when a step is missing, not an object, or an array', () => {
    expect(readPath(body, 'metadata.missing')).toBeUndefined();
    expect(readPath(body, 'metadata.nextCursor.deeper')).toBeUndefined();
    expect(readPath(body, 'items.0')).toBeUndefined();
    expect(readPath(undefined, 'metadata')).toBeUndefined();
  });

  it('reads own properties only, never what an object inherits', () => {
    expect(readPath({}, 'constructor')).toBeUndefined();
    expect(readPath({ a: {} }, 'a.toString')).toBeUndefined();
  });
});
