import { describe, expect, it } from 'vitest';
import { NO_FAULTS } from '../../../src/faults/gate.js';
import {
  DEFAULT_FAULTS,
  logNormalDelayMs,
  mergeFaults,
  planFaults,
  planSingleCallFault,
  quotaSpentFor,
} from '../../../src/faults/faults.js';

describe('fault planning', () => {
  it('plans nothing with the default settings', () => {
    for (let n = 0; n < 100; n++) {
      expect(planFaults(DEFAULT_FAULTS, n)).toEqual(NO_FAULTS);
    }
  });

  it('gives the same plan for the same seed and request number', () => {
    const settings = mergeFaults(DEFAULT_FAULTS, {
      seed: 3,
      rateLimitRate: 0.3,
      serverErrorRate: 0.3,
      dropConnectionRate: 0.3,
    });
    for (let n = 0; n < 50; n++) expect(planFaults(settings, n)).toEqual(planFaults({ ...settings }, n));
  });

  it('injects each fault at about its rate', () => {
    const settings = mergeFaults(DEFAULT_FAULTS, {
      rateLimitRate: 0.1,
      malformedJsonRate: 0.25,
      accessTokenEarlyExpiryRate: 0.05,
    });
    const plans = Array.from({ length: 20_000 }, (_, n) => planFaults(settings, n));
    expect(plans.filter((p) => p.reject?.status === 429).length / 20_000).toBeCloseTo(0.1, 1);
    expect(plans.filter((p) => p.malformed).length / 20_000).toBeCloseTo(0.25, 1);
    expect(plans.filter((p) => p.expireToken).length / 20_000).toBeCloseTo(0.05, 1);
  });

  it('keeps one fault kind independent of the rates of the others', () => {
    const base = mergeFaults(DEFAULT_FAULTS, { dropConnectionRate: 0.5 });
    const more = mergeFaults(base, { malformedJsonRate: 0.9, latency: { medianMs: 5, p99Ms: 50 } });
    for (let n = 0; n < 200; n++) expect(planFaults(more, n).drop).toBe(planFaults(base, n).drop);
  });

  it('draws 429 Retry-After and 5xx statuses from the settings', () => {
    const settings = mergeFaults(DEFAULT_FAULTS, { serverErrorRate: 1, serverErrorStatuses: [503] });
    expect(planFaults(settings, 0).reject).toEqual({ status: 503 });
    const limited = mergeFaults(DEFAULT_FAULTS, { rateLimitRate: 1, retryAfterSeconds: 9 });
    expect(planFaults(limited, 0).reject).toEqual({ status: 429, retryAfterSeconds: 9 });
  });

  it('refuses rates outside 0..1 and non-5xx statuses', () => {
    expect(() => mergeFaults(DEFAULT_FAULTS, { rateLimitRate: 1.1 })).toThrow(RangeError);
    expect(() => mergeFaults(DEFAULT_FAULTS, { serverErrorStatuses: [404] })).toThrow(RangeError);
    expect(() => mergeFaults(DEFAULT_FAULTS, { latency: { medianMs: 10, p99Ms: 5 } })).toThrow(RangeError);
  });
});

describe('single-call fault planning', () => {
  const unavailable = { status: 503, body: '<h1>down</h1>', contentType: 'text/html' };
  const uids = Array.from({ length: 2000 }, (_, i) => `call-${i}`);

  it('picks the same calls for the same seed, whatever the order of the requests', () => {
    const settings = mergeFaults(DEFAULT_FAULTS, {
      seed: 4,
      singleCallFailures: [{ rate: 0.2, attempts: 0, answer: unavailable }],
    });
    const forward = uids.map((uid) => planSingleCallFault(settings, uid, 0));
    const backward = [...uids].reverse().map((uid) => planSingleCallFault(settings, uid, 0));
    expect(backward.reverse()).toEqual(forward);
    expect(forward.filter((f) => f !== null).length / uids.length).toBeCloseTo(0.2, 1);
  });

  it('fails only the first `attempts` requests of a chosen call, all of them with 0', () => {
    const transient = mergeFaults(DEFAULT_FAULTS, {
      singleCallFailures: [{ rate: 1, attempts: 2, answer: unavailable }],
    });
    expect([0, 1, 2, 3].map((n) => planSingleCallFault(transient, 'a', n)?.kind ?? null)).toEqual([
      'answer',
      'answer',
      null,
      null,
    ]);
    const refused = mergeFaults(DEFAULT_FAULTS, {
      singleCallFailures: [{ rate: 1, attempts: 0, answer: { ...unavailable, status: 422 } }],
    });
    expect(planSingleCallFault(refused, 'a', 99)).toEqual({
      kind: 'answer',
      answer: { ...unavailable, status: 422 },
    });
  });

  it('skews the version of the chosen calls once their failures are over', () => {
    const settings = mergeFaults(DEFAULT_FAULTS, { singleCallVersionSkewRate: 1 });
    expect(planSingleCallFault(settings, 'a', 0)).toEqual({ kind: 'version-skew' });
    expect(planSingleCallFault(DEFAULT_FAULTS, 'a', 0)).toBeNull();
  });

  it('refuses canned answers and rules that are not well formed', () => {
    expect(() =>
      mergeFaults(DEFAULT_FAULTS, { cursorRejection: { status: 99, body: '', contentType: 'text/plain' } }),
    ).toThrow(RangeError);
    expect(() =>
      mergeFaults(DEFAULT_FAULTS, {
        singleCallFailures: [{ rate: 2, attempts: 0, answer: unavailable }],
      }),
    ).toThrow(/singleCallFailures\[0\]\.rate/);
    expect(() =>
      mergeFaults(DEFAULT_FAULTS, { singleCallFailures: [{ rate: 1, attempts: -1, answer: unavailable }] }),
    ).toThrow(RangeError);
  });
});

describe('log-normal latency', () => {
  it('has the asked median and 99th percentile', () => {
    expect(logNormalDelayMs(0.5, 20, 200)).toBeCloseTo(20, 6);
    expect(logNormalDelayMs(0.99, 20, 200)).toBeCloseTo(200, 3);
    expect(logNormalDelayMs(0.01, 20, 200)).toBeLessThan(20);
  });

  it('is a constant when the p99 equals the median, and zero for a zero median', () => {
    expect(logNormalDelayMs(0.999, 30, 30)).toBeCloseTo(30, 6);
    expect(logNormalDelayMs(0.7, 0, 0)).toBe(0);
  });
});

describe('a grant whose quota is spent (grantQuotaSpent)', () => {
  it('holds only the locations it names, with its Retry-After', () => {
    const settings = mergeFaults(DEFAULT_FAULTS, {
      grantQuotaSpent: { locations: ['loc-a'], retryAfterSeconds: 900 },
    });
    expect(quotaSpentFor(settings, 'loc-a')).toBe(900);
    expect(quotaSpentFor(settings, 'loc-b')).toBeNull();
    expect(quotaSpentFor(DEFAULT_FAULTS, 'loc-a')).toBeNull();
  });

  it('refuses a setting without locations or with a Retry-After under a second', () => {
    expect(() =>
      mergeFaults(DEFAULT_FAULTS, { grantQuotaSpent: { locations: [], retryAfterSeconds: 60 } }),
    ).toThrow(/grantQuotaSpent/);
    expect(() =>
      mergeFaults(DEFAULT_FAULTS, { grantQuotaSpent: { locations: ['loc-a'], retryAfterSeconds: 0 } }),
    ).toThrow(/grantQuotaSpent/);
  });
});
