import { describe, expect, it } from 'vitest';
import { isPlainObject, parseJsonObject } from '../../../src/json/json-object.js';

describe('parseJsonObject', () => {
  it('answers the object a JSON text holds', () => {
    expect(parseJsonObject('{"access_token":"t","expires_in":3600}')).toEqual({
      access_token: 't',
      expires_in: 3600,
    });
  });

  it('answers undefined for text that is not JSON, or JSON that is not an object', () => {
    for (const text of ['', 'not json', '{"unclosed":', 'null', '[1,2]', '"text"', '42'])
      expect(parseJsonObject(text), text).toBeUndefined();
  });
});

describe('isPlainObject', () => {
  it('is true for an object only: not null, an array or a primitive', () => {
    expect(isPlainObject({})).toBe(true);
    for (const value of [null, undefined, [], 'x', 1, true]) expect(isPlainObject(value)).toBe(false);
  });
});
