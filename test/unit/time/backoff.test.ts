import { describe, expect, it } from 'vitest';
import { RetriableError } from '../../../src/errors/index.js';
import { backoffDelayMs, mayRetry, retrying } from '../../../src/time/backoff.js';
import { ManualClock, RecordingClock } from '../../support/clock.js';
import { rejectionOf } from '../../support/rejection.js';

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

  it('draws only the jitter share of the delay at random: half of it with 0.5, none with 0', () => {
    expect(backoffDelayMs({ ...policy, jitter: 0.5 }, 3, 0)).toBe(200);
    expect(backoffDelayMs({ ...policy, jitter: 0.5 }, 3, 0.999999)).toBe(399);
    expect(backoffDelayMs({ ...policy, jitter: 0 }, 3, 0.7)).toBe(400);
  });

  it('stays a number for any retry, even from a zero initial delay', () => {
    expect(backoffDelayMs({ ...policy, initialDelayMs: 0 }, 10_000, 0.5)).toBe(0);
    expect(backoffDelayMs({ ...policy, multiplier: 10 }, 10_000, 0.999999)).toBe(999);
  });

  it('refuses a retry number below one and a jitter outside [0, 1]', () => {
    expect(() => backoffDelayMs(policy, 0, 0.5)).toThrow(RangeError);
    expect(() => backoffDelayMs({ ...policy, jitter: 1.5 }, 1, 0.5)).toThrow(RangeError);
  });
});

describe('retrying', () => {
  const transient = () => new RetriableError('API_UNAVAILABLE', 'try later');
  /** An attempt failing with each of `failures` in turn, then resolving with the attempt's number. */
  const failingWith = (...failures: Error[]) => {
    const attempts: number[] = [];
    const attempt = (n: number) => {
      attempts.push(n);
      const failure = failures.shift();
      return failure === undefined ? Promise.resolve(n) : Promise.reject(failure);
    };
    return { attempt, attempts };
  };
  const retriable = (error: unknown) => error instanceof RetriableError;

  it('tries a retriable failure again after the delay of the policy on the clock, and reports each retry', async () => {
    const clock = new RecordingClock(0, 0.5);
    const { attempt, attempts } = failingWith(transient(), transient());
    const retries: Array<{ attempt: number; waitMs: number }> = [];
    const result = await retrying(
      policy,
      { clock, retriable, onRetry: ({ attempt: n, waitMs }) => retries.push({ attempt: n, waitMs }) },
      attempt,
    );
    expect(result).toBe(3);
    expect(attempts).toEqual([1, 2, 3]);
    expect(clock.sleeps).toEqual([50, 100]);
    expect(retries).toEqual([
      { attempt: 1, waitMs: 50 },
      { attempt: 2, waitMs: 100 },
    ]);
  });

  it('passes a failure that is not retriable on at once, as it is', async () => {
    const clock = new RecordingClock();
    const refused = new Error('refused');
    const { attempt, attempts } = failingWith(refused);
    expect(await rejectionOf(retrying(policy, { clock, retriable: () => false }, attempt))).toBe(refused);
    expect(attempts).toEqual([1]);
    expect(clock.sleeps).toEqual([]);
  });

  it('never retries a programmer error, whatever the predicate says', async () => {
    const clock = new RecordingClock();
    const bug = new TypeError('undefined is not a function');
    const { attempt, attempts } = failingWith(bug);
    expect(await rejectionOf(retrying(policy, { clock, retriable: () => true }, attempt))).toBe(bug);
    expect(attempts).toEqual([1]);
  });

  it('gives up after maxAttempts attempts in all with the last failure', async () => {
    const clock = new RecordingClock();
    const last = transient();
    const { attempt, attempts } = failingWith(transient(), transient(), last, transient());
    const error = await rejectionOf(retrying({ ...policy, maxAttempts: 3 }, { clock, retriable }, attempt));
    expect(error).toBe(last);
    expect(attempts).toEqual([1, 2, 3]);
    expect(clock.sleeps).toHaveLength(2);
  });

  it('ends the wait between attempts when its signal is aborted', async () => {
    const clock = new ManualClock(0, 0.5);
    const stop = new AbortController();
    const { attempt, attempts } = failingWith(transient());
    const running = rejectionOf(retrying(policy, { clock, signal: stop.signal, retriable }, attempt));
    await clock.sleeping();
    const reason = new Error('stopping');
    stop.abort(reason);
    expect(await running).toBe(reason);
    expect(attempts).toEqual([1]);
  });
});

describe('mayRetry', () => {
  it('allows attempts up to maxAttempts in total', () => {
    expect(mayRetry({ ...policy, maxAttempts: 3 }, 2)).toBe(true);
    expect(mayRetry({ ...policy, maxAttempts: 3 }, 3)).toBe(false);
  });
});
