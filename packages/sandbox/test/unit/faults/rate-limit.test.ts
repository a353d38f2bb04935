import { describe, expect, it } from 'vitest';
import {
  admit,
  checkRateLimit,
  freshLimitState,
  fullBucket,
  rateLimitHeaders,
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

  it('announces the sustained rate, what is left and when the bucket is full again', () => {
    const settings = { requestsPerSecond: 10, burst: 10 };
    const state = freshLimitState(settings, 0);
    const admission = admit(state, settings, 0);
    expect(admission).toEqual({ ok: true, remaining: 9, resetSeconds: 1 });
    expect(rateLimitHeaders(settings, admission)).toEqual({
      'ratelimit-policy': '"default";q=10;w=1',
      ratelimit: '"default";r=9;t=1',
    });
  });
});

describe('checkRateLimit', () => {
  it('accepts a positive rate and a burst of at least one, and refuses the rest', () => {
    expect(() => checkRateLimit(limit)).not.toThrow();
    expect(() =>
      checkRateLimit({ ...limit, per: 'client', headers: true, quota: 1000, quotaWindowSeconds: 86_400 }),
    ).not.toThrow();
    expect(() => checkRateLimit({ ...limit, per: 'user' })).toThrow(RangeError);
    expect(() => checkRateLimit({ ...limit, quota: -1 })).toThrow(RangeError);
    expect(() => checkRateLimit({ requestsPerSecond: 0, burst: 1 })).toThrow(RangeError);
    expect(() => checkRateLimit({ requestsPerSecond: 5, burst: 0 })).toThrow(RangeError);
    expect(() => mergeFaults(DEFAULT_FAULTS, { rateLimit: { requestsPerSecond: -1, burst: 2 } })).toThrow(
      /faults.rateLimit/,
    );
  });
});
