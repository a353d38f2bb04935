import { describe, expect, it } from 'vitest';
import { whileLeadersSettle } from '../../../src/kafka/leaders-settle.js';
import { systemClock, type Clock } from '../../../src/time/clock.js';
import { rejectionOf } from '../../support/rejection.js';

/** Sleeps take no time; their lengths are recorded. */
function instantClock(): Clock & { slept: number[] } {
  const slept: number[] = [];
  return { ...systemClock, slept, sleep: (ms: number) => (slept.push(ms), Promise.resolve()) };
}

function kafkaError(type: string): Error {
  return Object.assign(new Error(type), { type });
}

describe('whileLeadersSettle', () => {
  it('tries again while the partition leaders are being elected, with growing waits', async () => {
    const clock = instantClock();
    const answers = ['NOT_LEADER_FOR_PARTITION', 'LEADER_NOT_AVAILABLE', 'UNKNOWN_TOPIC_OR_PARTITION'];
    const result = await whileLeadersSettle(() => {
      const type = answers.shift();
      return type === undefined ? Promise.resolve('offsets') : Promise.reject(kafkaError(type));
    }, clock);
    expect(result).toBe('offsets');
    expect(clock.slept).toEqual([200, 400, 800]);
  });

  it('passes any other error on at once', async () => {
    const clock = instantClock();
    const error = kafkaError('TOPIC_AUTHORIZATION_FAILED');
    expect(await rejectionOf(whileLeadersSettle(() => Promise.reject(error), clock))).toBe(error);
    expect(clock.slept).toEqual([]);
  });

  it('gives up after a bounded number of attempts with the last error', async () => {
    const clock = instantClock();
    let attempts = 0;
    const error = await rejectionOf(
      whileLeadersSettle(() => {
        attempts += 1;
        return Promise.reject(kafkaError('NOT_LEADER_FOR_PARTITION'));
      }, clock),
    );
    expect((error as { type?: string }).type).toBe('NOT_LEADER_FOR_PARTITION');
    expect(attempts).toBe(8);
  });
});
