import { describe, expect, it } from 'vitest';
import { checkRateLimit, fullBucket, takeToken } from '../../../src/faults/rate-limit.js';
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

describe('checkRateLimit', () => {
  it('accepts a positive rate and a burst of at least one, and refuses the rest', () => {
    expect(() => checkRateLimit(limit)).not.toThrow();
    expect(() => checkRateLimit({ requestsPerSecond: 0, burst: 1 })).toThrow(RangeError);
    expect(() => checkRateLimit({ requestsPerSecond: 5, burst: 0 })).toThrow(RangeError);
    expect(() => mergeFaults(DEFAULT_FAULTS, { rateLimit: { requestsPerSecond: -1, burst: 2 } })).toThrow(
      /faults.rateLimit/,
    );
  });
});
