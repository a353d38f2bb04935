import { describe, expect, it } from 'vitest';
import {
  backoffDelayMs,
  DEFAULT_RETRY_POLICY,
  mayRetry,
  parseRetryAfterMs,
} from '../../../src/api/retry-policy.js';

const policy = { ...DEFAULT_RETRY_POLICY, initialDelayMs: 100, maxDelayMs: 1_000, multiplier: 2 };

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

describe('parseRetryAfterMs', () => {
  const now = Date.UTC(2024, 0, 1, 0, 0, 0);

  it('reads delay-seconds', () => {
    expect(parseRetryAfterMs('0', now)).toBe(0);
    expect(parseRetryAfterMs(' 7 ', now)).toBe(7_000);
  });

  it('reads an HTTP-date as the time left until it', () => {
    expect(parseRetryAfterMs('Mon, 01 Jan 2024 00:00:30 GMT', now)).toBe(30_000);
  });

  it('reads a date in the past as no wait', () => {
    expect(parseRetryAfterMs('Sun, 31 Dec 2023 23:59:00 GMT', now)).toBe(0);
  });

  it('ignores absent and unparsable values', () => {
    for (const value of [null, undefined, '', '-3', '1.5', 'soon', 'Xyz, 99 Foo 2024']) {
      expect(parseRetryAfterMs(value, now), String(value)).toBeNull();
    }
  });
});

describe('mayRetry', () => {
  it('allows attempts up to maxAttempts in total', () => {
    expect(mayRetry({ ...policy, maxAttempts: 3 }, 2)).toBe(true);
    expect(mayRetry({ ...policy, maxAttempts: 3 }, 3)).toBe(false);
  });
});
