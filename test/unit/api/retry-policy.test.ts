import { describe, expect, it } from 'vitest';
import { parseRetryAfterMs } from '../../../src/api/retry-policy.js';

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

  it('reads a fractional delay, and a Unix time in seconds or milliseconds (forms APIs write)', () => {
    expect(parseRetryAfterMs('1.5', now)).toBe(1_500);
    expect(parseRetryAfterMs(String(now / 1000 + 20), now)).toBe(20_000);
    expect(parseRetryAfterMs(String(now + 20_000), now)).toBe(20_000);
  });

  it('ignores absent values and values that make no sense (the caller backs off)', () => {
    for (const value of [null, undefined, '', '-3', 'soon', 'Xyz, 99 Foo 2024', '99999999999999999']) {
      expect(parseRetryAfterMs(value, now), String(value)).toBeNull();
    }
  });
});
