import { describe, expect, it } from 'vitest';
import { whenTopicsLed, whileLeadersSettle } from '../../../../src/kafka/topics/leaders-settle.js';
import { RecordingClock } from '../../../support/clock.js';
import { protocolError } from '../../../support/kafka-errors.js';
import { rejectionOf } from '../../../support/rejection.js';

describe('whileLeadersSettle', () => {
  it('tries again while the partition leaders are being elected, with growing waits', async () => {
    const clock = new RecordingClock();
    const answers = ['NOT_LEADER_FOR_PARTITION', 'LEADER_NOT_AVAILABLE', 'UNKNOWN_TOPIC_OR_PARTITION'];
    const result = await whileLeadersSettle(() => {
      const type = answers.shift();
      return type === undefined ? Promise.resolve('offsets') : Promise.reject(protocolError(type));
    }, clock);
    expect(result).toBe('offsets');
    expect(clock.sleeps).toEqual([200, 400, 800]);
  });

  it('passes any other error on at once', async () => {
    const clock = new RecordingClock();
    const error = protocolError('TOPIC_AUTHORIZATION_FAILED');
    expect(await rejectionOf(whileLeadersSettle(() => Promise.reject(error), clock))).toBe(error);
    expect(clock.sleeps).toEqual([]);
  });

  it('gives up after a bounded number of attempts with the last error', async () => {
    const clock = new RecordingClock();
    let attempts = 0;
    const error = await rejectionOf(
      whileLeadersSettle(() => {
        attempts += 1;
        return Promise.reject(protocolError('NOT_LEADER_FOR_PARTITION'));
      }, clock),
    );
    expect((error as { type?: string }).type).toBe('NOT_LEADER_FOR_PARTITION');
    expect(attempts).toBe(8);
  });
});

describe('whenTopicsLed', () => {
  it("waits while the broker's metadata does not know a just-created topic yet, which kafkajs's waitForLeaders gives up on", async () => {
    const clock = new RecordingClock();
    const answers = ['UNKNOWN_TOPIC_OR_PARTITION', 'UNKNOWN_TOPIC_OR_PARTITION', 'LEADER_NOT_AVAILABLE'];
    const asked: string[][] = [];
    await whenTopicsLed(
      {
        fetchTopicMetadata: (options) => {
          asked.push(options?.topics ?? []);
          const type = answers.shift();
          return type === undefined ? Promise.resolve({ topics: [] }) : Promise.reject(protocolError(type));
        },
      },
      ['calls', 'offsets'],
      clock,
    );
    expect(asked).toEqual(Array.from({ length: 4 }, () => ['calls', 'offsets']));
    expect(clock.sleeps).toEqual([200, 400, 800]);
  });

  it('gives up after about 30 s with the last error', async () => {
    const clock = new RecordingClock();
    let attempts = 0;
    const waiting = whenTopicsLed(
      {
        fetchTopicMetadata: () => {
          attempts += 1;
          return Promise.reject(protocolError('UNKNOWN_TOPIC_OR_PARTITION'));
        },
      },
      ['calls'],
      clock,
    );
    expect(((await rejectionOf(waiting)) as { type?: string }).type).toBe('UNKNOWN_TOPIC_OR_PARTITION');
    expect(attempts).toBe(18);
    expect(clock.sleeps.reduce((sum, ms) => sum + ms, 0)).toBe(29_000);
  });

  it('passes a refusal on at once', async () => {
    const clock = new RecordingClock();
    const error = protocolError('TOPIC_AUTHORIZATION_FAILED');
    const waiting = whenTopicsLed({ fetchTopicMetadata: () => Promise.reject(error) }, ['calls'], clock);
    expect(await rejectionOf(waiting)).toBe(error);
    expect(clock.sleeps).toEqual([]);
  });
});
