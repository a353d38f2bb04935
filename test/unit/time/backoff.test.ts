import { describe, expect, it } from 'vitest';
import { backoffDelayMs, mayRetry } from '../../../src/time/backoff.js';

const policy = { maxAttempts: 8, initialDelayMs: 100, maxDelayMs: 1_000, multiplier: 2 };

describe('backoffDelayMs', () => {
  it('grows the ceiling exponentially and caps it at maxDelayMs', () => {
    const nearlyOne = 0.999999;
    expect(backoffDelayMs(policy, 1, nearlyOne)).toBe(99);
    expect(backoffDelayMs(policy, 2, nearlyOne)).toBe(199);
    expect(backoffDelayMs(policy, 4, nearlyOne)).toBe(799);
    expect(backoffDelayMs(policy, 5, nearlyOne)).toBe(999);
    expect(backoffDelayMs(policy, 30, nearlyOne)).toBe(999);
  });

  it('draws the whole range from zero (full jitter)', () => {
    expect(backoffDelayMs(policy, 3, 0)).toBe(0);
    expect(backoffDelayMs(policy, 3, 0.5)).toBe(200);
  });

  it('refuses a retry number below one', () => {
    expect(() => backoffDelayMs(policy, 0, 0.5)).toThrow(RangeError);
  });
});

describe('mayRetry', () => {
  it('allows attempts up to maxAttempts in total', () => {
    expect(mayRetry({ ...policy, maxAttempts: 3 }, 2)).toBe(true);
    expect(mayRetry({ ...policy, maxAttempts: 3 }, 3)).toBe(false);
  });
});
