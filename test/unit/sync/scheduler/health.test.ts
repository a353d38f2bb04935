import { describe, expect, it } from 'vitest';
import { FatalError, RetriableError } from '../../../../src/errors/index.js';
import { silentLogger } from '../../../../src/logging/logger.js';
import { testMetrics } from '../../../support/metrics.js';
import { DEFAULT_STOPPED_RETRY } from '../../../../src/sync/scheduler/health-rule.js';
import {
  failureRetryMs,
  LocationHealth,
  madeProgress,
  stoppedByCode,
  stoppedRetryMs,
} from '../../../../src/sync/scheduler/health.js';
import { slotFor, type Slot } from '../../../../src/sync/scheduler/scheduled-location.js';
import { ManualClock } from '../../../support/clock.js';
import { loc } from '../../../support/sync/scheduler-harness.js';
import { ScriptedLocation } from '../../../support/sync/scripted-location.js';

const backoff = { initialDelayMs: 1_000, maxDelayMs: 60_000, multiplier: 2, jitter: 0, maxAttempts: 5 };

describe('madeProgress', () => {
  it('is a page that completes its traversal or publishes something, not a restart that publishes nothing', () => {
    expect(madeProgress({ complete: true, published: 0 })).toBe(true);
    expect(madeProgress({ complete: false, published: 3 })).toBe(true);
    expect(madeProgress({ complete: false, published: 0 })).toBe(false);
  });
});

describe('failureRetryMs', () => {
  it('grows with the consecutive failures up to the cap, and is at least a millisecond', () => {
    expect([1, 2, 3, 7, 8].map((n) => failureRetryMs(backoff, n, 0))).toEqual([
      1_000, 2_000, 4_000, 60_000, 60_000,
    ]);
    expect(failureRetryMs({ ...backoff, initialDelayMs: 0 }, 1, 0)).toBe(1);
  });

  it('stops growing after the 30th failure', () => {
    const uncapped = { ...backoff, maxDelayMs: Number.MAX_VALUE };
    expect(failureRetryMs(uncapped, 45, 0)).toBe(failureRetryMs(uncapped, 30, 0));
    expect(failureRetryMs(uncapped, 30, 0)).toBeGreaterThan(failureRetryMs(uncapped, 29, 0));
  });
});

describe('stoppedRetryMs', () => {
  it('doubles from a minute to an hour for an error that heals, stays at a minute when paused, never for the rest', () => {
    expect([1, 2, 7, 8].map((stops) => stoppedRetryMs(DEFAULT_STOPPED_RETRY, 'heals', stops, 0))).toEqual([
      60_000, 120_000, 3_600_000, 3_600_000,
    ]);
    expect(stoppedRetryMs(DEFAULT_STOPPED_RETRY, 'paused', 5, 0)).toBe(60_000);
    expect(stoppedRetryMs(DEFAULT_STOPPED_RETRY, 'never', 1, 0)).toBeNull();
  });
});

describe('stoppedByCode', () => {
  it('counts the stopped locations by the code that stopped them', () => {
    const slots = [{ stoppedBy: 'A' }, { stoppedBy: null }, { stoppedBy: 'B' }, { stoppedBy: 'A' }];
    expect([...stoppedByCode(slots)]).toEqual([
      ['A', 2],
      ['B', 1],
    ]);
  });
});

describe('LocationHealth', () => {
  function health() {
    const clock = new ManualClock(5_000);
    const metrics = testMetrics();
    const slots: Slot[] = [];
    const rule = new LocationHealth({
      failureBackoff: backoff,
      stoppedRetry: DEFAULT_STOPPED_RETRY,
      metrics,
      logger: silentLogger(),
      clock,
      slots: () => slots,
    });
    const slot = slotFor(new ScriptedLocation(loc(1), clock), new AbortController().signal);
    slots.push(slot);
    const gauge = async () =>
      (await metrics.locationsStopped.get()).values.map((v) => [v.labels.code, v.value]);
    const errors = async () =>
      (await metrics.locationErrors.get()).values.map((v) => [v.labels.code, v.value]);
    return { rule, slot, gauge, errors };
  }

  it('backs a location off after a retriable error, longer after each, and records the error', async () => {
    const { rule, slot, errors } = health();
    const down = new RetriableError('API_UNAVAILABLE', 'down');
    expect(rule.failed(slot, down)).toEqual({ state: 'backoff', delayMs: 1_000 });
    expect(rule.failed(slot, down)).toEqual({ state: 'backoff', delayMs: 2_000 });
    expect(slot).toMatchObject({
      consecutiveFailures: 2,
      lastError: { code: 'API_UNAVAILABLE', message: 'down', at: 5_000 },
    });
    expect(await errors()).toEqual([['API_UNAVAILABLE', 2]]);
  });

  it('clears the failures only on a page that made progress', () => {
    const { rule, slot } = health();
    rule.failed(slot, new RetriableError('API_UNAVAILABLE', 'down'));
    rule.pageDone(slot, { complete: false, published: 0 });
    expect(slot.consecutiveFailures).toBe(1);
    rule.pageDone(slot, { complete: false, published: 1 });
    expect(slot.consecutiveFailures).toBe(0);
  });

  it('stops a location on a fatal error, counts it in the gauge, and resumes it only on progress', async () => {
    const { rule, slot, gauge } = health();
    const forbidden = new FatalError('API_FORBIDDEN', 'no access');
    expect(rule.failed(slot, forbidden)).toEqual({ state: 'stopped', delayMs: 60_000 });
    expect(rule.failed(slot, forbidden)).toEqual({ state: 'stopped', delayMs: 120_000 });
    expect(slot).toMatchObject({ stops: 2, stoppedBy: 'API_FORBIDDEN' });
    expect(await gauge()).toEqual([['API_FORBIDDEN', 1]]);
    rule.pageDone(slot, { complete: false, published: 0 });
    expect(slot).toMatchObject({ stops: 2, stoppedBy: 'API_FORBIDDEN' });
    rule.pageDone(slot, { complete: true, published: 0 });
    expect(slot).toMatchObject({ stops: 0, stoppedBy: null });
    expect(await gauge()).toEqual([]);
  });

  it('never retries a location stopped by an error only a restart can fix', () => {
    const { rule, slot } = health();
    expect(rule.failed(slot, new TypeError('a bug'))).toEqual({
      state: 'stopped',
      delayMs: Number.POSITIVE_INFINITY,
    });
    expect(slot.stoppedBy).toBe('TYPEERROR');
  });

  it('no longer counts a stopped location as stopped once a retriable error follows', async () => {
    const { rule, slot, gauge } = health();
    rule.failed(slot, new FatalError('API_FORBIDDEN', 'no access'));
    rule.failed(slot, new RetriableError('API_UNAVAILABLE', 'down'));
    expect(slot).toMatchObject({ stoppedBy: null, stops: 1, consecutiveFailures: 1 });
    expect(await gauge()).toEqual([]);
  });
});
