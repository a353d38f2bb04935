import { describe, expect, it } from 'vitest';
import { FatalError, RetriableError } from '../../../../src/errors/index.js';
import {
  DEFAULT_STOPPED_RETRY,
  healingOf,
  stoppedRetryDelayMs,
} from '../../../../src/sync/scheduler/health-rule.js';

describe('healingOf', () => {
  it('retries with backoff a location stopped by a condition outside the process', () => {
    for (const code of ['API_FORBIDDEN', 'API_BAD_REQUEST', 'CURSOR_LOOP', 'API_NOT_FOUND'] as const)
      expect(healingOf(new FatalError(code, 'x'))).toBe('heals');
  });

  it('pauses the locations of a grant that waits for `auth login`', () => {
    expect(healingOf(new FatalError('AUTH_GRANT_REVOKED', 'x'))).toBe('paused');
    expect(healingOf(new FatalError('AUTH_NO_GRANT', 'x'))).toBe('paused');
  });

  it('never retries programmer errors or settings read once at start', () => {
    expect(healingOf(new TypeError('bug'))).toBe('never');
    expect(healingOf('thrown string')).toBe('never');
    expect(healingOf(new FatalError('AUTH_CLIENT_REJECTED', 'x'))).toBe('never');
    expect(healingOf(new FatalError('AUTH_STATIC_TOKEN_REJECTED', 'x'))).toBe('never');
  });

  it('treats a retriable error that reached it as able to heal', () => {
    expect(healingOf(new RetriableError('API_UNAVAILABLE', 'x'))).toBe('heals');
  });
});

describe('stoppedRetryDelayMs', () => {
  it('doubles from a minute to an hour by default', () => {
    const waits = [1, 2, 3, 6, 7, 8, 100].map((stops) =>
      stoppedRetryDelayMs(DEFAULT_STOPPED_RETRY, 'heals', stops, 0),
    );
    expect(waits).toEqual([60_000, 120_000, 240_000, 1_920_000, 3_600_000, 3_600_000, 3_600_000]);
  });

  it('takes at most the jitter fraction off the wait', () => {
    expect(stoppedRetryDelayMs(DEFAULT_STOPPED_RETRY, 'heals', 1, 0.999_999)).toBe(48_000);
    expect(stoppedRetryDelayMs(DEFAULT_STOPPED_RETRY, 'heals', 100, 0.5)).toBe(3_240_000);
  });

  it('keeps a paused location at the initial delay', () => {
    expect(stoppedRetryDelayMs(DEFAULT_STOPPED_RETRY, 'paused', 50, 0)).toBe(60_000);
  });

  it('refuses a stop count below one', () => {
    expect(() => stoppedRetryDelayMs(DEFAULT_STOPPED_RETRY, 'heals', 0, 0)).toThrow(RangeError);
  });
});
