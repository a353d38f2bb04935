import { describe, expect, it } from 'vitest';
import { FatalError, RetriableError } from '../../../src/errors/index.js';
import { waitUntilAvailable } from '../../../src/runtime/wait-until-available.js';

/** A clock whose sleeps return at once and are recorded; an aborted signal rejects like the real one. */
function recordingClock() {
  const sleeps: number[] = [];
  return {
    sleeps,
    random: () => 0.5,
    sleep: async (ms: number, signal?: AbortSignal) => {
      signal?.throwIfAborted();
      sleeps.push(ms);
    },
  };
}

function attempts(results: Array<Error | string>) {
  let calls = 0;
  const attempt = async () => {
    const next = results[calls++];
    if (next instanceof Error) throw next;
    return next ?? 'done';
  };
  return { attempt, calls: () => calls };
}

const down = () =>
  new RetriableError('KAFKA_UNAVAILABLE', 'cannot check or create the topics: connection refused');

describe('waitUntilAvailable', () => {
  it('retries a dependency that is down at start with a doubling, capped backoff and a warning each time', async () => {
    const clock = recordingClock();
    const warnings: string[] = [];
    const { attempt, calls } = attempts([down(), down(), down(), down(), 'session']);
    const result = await waitUntilAvailable(attempt, {
      what: 'the Kafka cluster',
      logger: { warn: (_details, message) => warnings.push(message) },
      clock,
      initialDelayMs: 1000,
      maxDelayMs: 5000,
    });
    expect(result).toBe('session');
    expect(calls()).toBe(5);
    expect(clock.sleeps).toEqual([1000, 2000, 4000, 5000]);
    expect(warnings[0]).toBe('the Kafka cluster is not available yet; waiting for it');
  });

  it('ends at once on an error a person must fix, and on a programmer error', async () => {
    const clock = recordingClock();
    const logger = { warn: () => undefined };
    const fatal = new FatalError('KAFKA_NOT_PERMITTED', 'Kafka refused a topic operation');
    await expect(waitUntilAvailable(attempts([fatal]).attempt, { what: 'x', logger, clock })).rejects.toBe(
      fatal,
    );
    const bug = new TypeError('bug');
    await expect(waitUntilAvailable(attempts([bug]).attempt, { what: 'x', logger, clock })).rejects.toBe(bug);
    expect(clock.sleeps).toEqual([]);
  });

  it('ends the wait with the last error when the signal aborts (SIGTERM while waiting)', async () => {
    const stop = new AbortController();
    const last = down();
    const wait = waitUntilAvailable(attempts([last, down()]).attempt, {
      what: 'the Kafka cluster',
      logger: { warn: () => stop.abort() },
      clock: recordingClock(),
      signal: stop.signal,
    });
    await expect(wait).rejects.toBe(last);
  });
});
