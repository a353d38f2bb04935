import { describe, expect, it } from 'vitest';
import { codeOf, dispositionOf, isProgrammerError, RetriableError } from '../../../src/errors/index.js';

describe('isProgrammerError', () => {
  it('holds for the built-in programmer error classes only, so they are never retried as transient', () => {
    for (const bug of [
      new TypeError('t'),
      new RangeError('r'),
      new ReferenceError('x'),
      new SyntaxError('s'),
    ])
      expect(isProgrammerError(bug)).toBe(true);
    for (const answer of [new Error('ECONNRESET'), new RetriableError('API_UNAVAILABLE', 'later'), 'text'])
      expect(isProgrammerError(answer)).toBe(false);
  });

  it('is fatal with its class name as code, as any error that is not a ConnectorError', () => {
    const bug = new TypeError('undefined is not a function');
    expect(dispositionOf(bug)).toBe('fatal');
    expect(codeOf(bug)).toBe('TYPEERROR');
  });
});
