import { describe, expect, it } from 'vitest';
import {
  admit,
  checkRateLimit,
  freshLimitState,
  fullBucket,
  rateLimitHeaders,
  resetValue,
  retryAfterValue,
  takeToken,
} from '../../../src/faults/rate-limit.js';
import { mergeFaults, DEFAULT_FAULTS } from '../../../src/faults/faults.js';

const limit = { requestsPerSecond: 20, burst: 20 };

describe('takeToken', () => {
  it('lets a burst of `burst` requests through, then answers with the seconds until the next token', () => {
    const bucket = fullBucket(limit, 0);
    for (let i = 0; i < 20; i++) expect(takeToken(bucket, limit, 0)).toBeNull();
    expect(takeToken(bucket, limit, 0)).toBe(1);
  });

  it('never refuses requests spaced at the rate', () => {
    const bucket = fullBucket({ requestsPerSecond: 20, burst: 1 }, 0);
    for (let at = 0; at < 10_000; at += 50)
      expect(takeToken(bucket, { requestsPerSecond: 20, burst: 1 }, at)).toBeNull();
  });

  it('refuses a second burst of a full second of requests that comes before the bucket refilled', () => {
    const bucket = fullBucket(limit, 0);
    for (let i = 0; i < 20; i++) takeToken(bucket, limit, 0);
    const refused = Array.from({ length: 20 }, () => takeToken(bucket, limit, 900)).filter((r) => r !== null);
    expect(refused).toHaveLength(2);
  });
});

describe('admit', () => {
  it('counts a quota per window, refusing with the seconds to the window end, and starts again after it', () => {
    const settings = { requestsPerSecond: 100, burst: 100, quota: 2, quotaWindowSeconds: 60 };
    const state = freshLimitState(settings, 0);
    expect(admit(state, settings, 0)).toMatchObject({ ok: true });
    expect(admit(state, settings, 1_000)).toMatchObject({ ok: true });
    expect(admit(state, settings, 10_000)).toEqual({ ok: false, retryAfterSeconds: 50, reason: 'quota' });
    expect(admit(state, settings, 60_000)).toMatchObject({ ok: true });
  });

  it('tells what is left of the quota window after an admitted request', () => {
    const settings = { requestsPerSecond: 100, burst: 100, quota: 2, quotaWindowSeconds: 60 };
    const state = freshLimitState(settings, 0);
    expect(admit(state, settings, 0)).toMatchObject({ quota: { quota: 2, remaining: 1, resetMs: 60_000 } });
    expect(admit(state, settings, 1_500)).toMatchObject({
      quota: { quota: 2, remaining: 0, resetMs: 58_500 },
    });
  });
});

/** 2026-11-26T17:00:00Z on the sandbox clock. */
const EPOCH_NOW = Date.UTC(2026, 10, 26, 17, 0, 0);

describe('rateLimitHeaders', () => {
  it('announces nothing unless asked', () => {
    const settings = { requestsPerSecond: 10, burst: 10 };
    const admission = admit(freshLimitState(settings, 0), settings, 0);
    expect(rateLimitHeaders(settings, admission, EPOCH_NOW)).toEqual({});
    expect(rateLimitHeaders({ ...settings, headers: false }, admission, EPOCH_NOW)).toEqual({});
  });

  it('announces the sustained rate, what is left and when the bucket is full again (IETF draft)', () => {
    const settings = { requestsPerSecond: 10, burst: 10, headers: true };
    const state = freshLimitState(settings, 0);
    const admission = admit(state, settings, 0);
    expect(admission).toEqual({ ok: true, remaining: 9, resetSeconds: 1, quota: null });
    expect(rateLimitHeaders(settings, admission, EPOCH_NOW)).toEqual({
      'ratelimit-policy': '"default";q=10;w=1',
      ratelimit: '"default";r=9;t=1',
    });
    expect(rateLimitHeaders({ ...settings, headers: 'ietf' }, admission, EPOCH_NOW)).toEqual(
      rateLimitHeaders(settings, admission, EPOCH_NOW),
    );
  });

  it("announces X-RateLimit-* of the quota's window when there is one, of the bucket otherwise", () => {
    const quota = {
      requestsPerSecond: 100,
      burst: 100,
      quota: 1,
      quotaWindowSeconds: 3600,
      headers: 'x-ratelimit',
    } as const;
    expect(rateLimitHeaders(quota, admit(freshLimitState(quota, 0), quota, 0), EPOCH_NOW)).toEqual({
      'x-ratelimit-limit': '1',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': '3600',
    });
    const bucket = { requestsPerSecond: 10, burst: 5, headers: 'x-ratelimit' } as const;
    expect(rateLimitHeaders(bucket, admit(freshLimitState(bucket, 0), bucket, 0), EPOCH_NOW)).toEqual({
      'x-ratelimit-limit': '5',
      'x-ratelimit-remaining': '4',
      'x-ratelimit-reset': '1',
    });
  });

  it('announces a refusal as nothing left until its Retry-After', () => {
    const settings = { requestsPerSecond: 0.5, burst: 1, headers: 'x-ratelimit' } as const;
    const state = freshLimitState(settings, 0);
    admit(state, settings, 0);
    const refused = admit(state, settings, 0);
    expect(refused).toEqual({ ok: false, retryAfterSeconds: 2, reason: 'rate' });
    expect(rateLimitHeaders(settings, refused, EPOCH_NOW)).toMatchObject({
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': '2',
    });
    expect(rateLimitHeaders({ ...settings, headers: true }, refused, EPOCH_NOW)).toMatchObject({
      ratelimit: '"default";r=0;t=2',
    });
  });

  it('writes the reset in the form asked for, X-RateLimit-Reset and IETF t alike', () => {
    const base = { requestsPerSecond: 100, burst: 100, quota: 1, quotaWindowSeconds: 90 } as const;
    const reset = (
      headers: 'x-ratelimit' | 'ietf',
      resetForm: 'delta-seconds' | 'epoch-seconds' | 'epoch-ms',
    ) => {
      const settings = { ...base, headers, resetForm };
      const announced = rateLimitHeaders(
        settings,
        admit(freshLimitState(settings, 0), settings, 0),
        EPOCH_NOW,
      );
      return announced['x-ratelimit-reset'] ?? announced.ratelimit;
    };
    expect(reset('x-ratelimit', 'delta-seconds')).toBe('90');
    expect(reset('x-ratelimit', 'epoch-seconds')).toBe(String(EPOCH_NOW / 1000 + 90));
    expect(reset('x-ratelimit', 'epoch-ms')).toBe(String(EPOCH_NOW + 90_000));
    expect(reset('ietf', 'epoch-ms')).toBe(`"default";r=99;t=${EPOCH_NOW + 1_000}`);
  });
});

describe('resetValue and retryAfterValue', () => {
  it('round a reset up, never announcing it earlier than it is', () => {
    expect(resetValue(1_001, 'delta-seconds', EPOCH_NOW)).toBe('2');
    expect(resetValue(1_001, 'epoch-seconds', EPOCH_NOW)).toBe(String(EPOCH_NOW / 1000 + 2));
    expect(resetValue(0.5, 'epoch-ms', EPOCH_NOW)).toBe(String(EPOCH_NOW + 1));
  });

  it('write a Retry-After as delay-seconds or as an IMF-fixdate HTTP-date, rounded up to the second', () => {
    expect(retryAfterValue(30, 'delay-seconds', EPOCH_NOW)).toBe('30');
    expect(retryAfterValue(30, 'http-date', EPOCH_NOW)).toBe('Thu, 26 Nov 2026 17:00:30 GMT');
    expect(retryAfterValue(30, 'http-date', EPOCH_NOW + 1)).toBe('Thu, 26 Nov 2026 17:00:31 GMT');
  });
});

describe('checkRateLimit', () => {
  it('accepts a positive rate and a burst of at least one, and refuses the rest', () => {
    expect(() => checkRateLimit(limit)).not.toThrow();
    expect(() =>
      checkRateLimit({ ...limit, per: 'client', headers: true, quota: 1000, quotaWindowSeconds: 86_400 }),
    ).not.toThrow();
    expect(() =>
      checkRateLimit({ ...limit, headers: 'x-ratelimit', resetForm: 'epoch-ms', quota: null }),
    ).not.toThrow();
    expect(() => checkRateLimit({ ...limit, headers: 'x-rate' })).toThrow(RangeError);
    expect(() => checkRateLimit({ ...limit, resetForm: 'epoch-us' })).toThrow(RangeError);
    expect(() => checkRateLimit({ ...limit, per: 'user' })).toThrow(RangeError);
    expect(() => checkRateLimit({ ...limit, quota: -1 })).toThrow(RangeError);
    expect(() => checkRateLimit({ requestsPerSecond: 0, burst: 1 })).toThrow(RangeError);
    expect(() => checkRateLimit({ requestsPerSecond: 5, burst: 0 })).toThrow(RangeError);
    expect(() => mergeFaults(DEFAULT_FAULTS, { rateLimit: { requestsPerSecond: -1, burst: 2 } })).toThrow(
      /faults.rateLimit/,
    );
    expect(() => mergeFaults(DEFAULT_FAULTS, { retryAfterForm: 'epoch' as unknown as 'http-date' })).toThrow(
      /faults.retryAfterForm/,
    );
    expect(mergeFaults(DEFAULT_FAULTS, { retryAfterForm: 'http-date' }).retryAfterForm).toBe('http-date');
  });
});
