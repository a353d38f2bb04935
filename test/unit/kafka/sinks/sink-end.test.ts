/**
 * How the exactly-once sink ends for good: a fatal error told once, a standing down when another instance may
 * hold the transactional id, and a takeover in distributed mode that the pages see as retriable.
 */
import { describe, expect, it } from 'vitest';
import { FatalError, RetriableError } from '../../../../src/errors/index.js';
import { SinkEnd } from '../../../../src/kafka/sinks/sink-end.js';
import { ManualClock } from '../../../support/clock.js';
import { capturingLogger } from '../../../support/logger.js';

function sinkEnd() {
  const log = capturingLogger();
  const producers: {
    fatal: FatalError | undefined;
    fails: FatalError[];
    fail: (e: FatalError) => FatalError;
  } = {
    fatal: undefined,
    fails: [],
    fail(error) {
      producers.fails.push(error);
      producers.fatal ??= error;
      return producers.fatal;
    },
  };
  const fatals: FatalError[] = [];
  let takenOver = 0;
  const end = new SinkEnd({
    producers,
    connectorName: 'calls',
    transactionalId: 'calls-tx-0',
    transactionStartedAt: () => 1_000,
    onFatal: (error) => fatals.push(error),
    onTakenOver: () => (takenOver += 1),
    logger: log.logger,
    clock: new ManualClock(4_000),
  });
  return { end, producers, fatals, log, takenOver: () => takenOver };
}

describe('SinkEnd', () => {
  it('has not ended before anything fails', () => {
    expect(sinkEnd().end.error).toBeUndefined();
  });

  it('tells a fatal error once and keeps the first one', () => {
    const { end, fatals, log } = sinkEnd();
    const first = new FatalError('KAFKA_NOT_PERMITTED', 'not permitted');
    const second = new FatalError('KAFKA_COMPRESSION_UNAVAILABLE', 'second');
    expect(end.fail(first)).toBe(first);
    expect(end.fail(second)).toBe(first);
    expect(end.error).toBe(first);
    expect(fatals).toEqual([first]);
    expect(log.lines().filter((line) => line.code === 'KAFKA_NOT_PERMITTED')).toHaveLength(1);
    expect(log.lines().filter((line) => line.code === 'KAFKA_COMPRESSION_UNAVAILABLE')).toHaveLength(0);
  });

  it('stands down as fenced by another instance, naming the transactional id and how long the transaction was open', () => {
    const { end, fatals } = sinkEnd();
    const cause = new Error('producer fenced');
    const error = end.standDown(cause, 'the broker fenced the producer');
    expect(error.code).toBe('KAFKA_FENCED_BY_ANOTHER_INSTANCE');
    expect(error.message).toContain('calls-tx-0');
    expect(error.message).toContain('the broker fenced the producer');
    expect(error.cause).toBe(cause);
    expect(error.details).toEqual({ transactionOpenMs: 3_000 });
    expect(fatals).toEqual([error]);
  });

  it('ends with a retriable takeover the pages see, standing the producers down without calling onFatal', () => {
    const { end, producers, fatals, log, takenOver } = sinkEnd();
    const error = end.takenOver(new Error('fenced'));
    expect(error).toBeInstanceOf(RetriableError);
    expect(error.code).toBe('KAFKA_PARTITION_TAKEN_OVER');
    expect(end.error).toBe(error);
    expect(producers.fails.map((e) => e.code)).toEqual(['KAFKA_PARTITION_TAKEN_OVER']);
    expect(fatals).toEqual([]);
    expect(takenOver()).toBe(1);
    expect(log.lines().filter((line) => line.code === 'KAFKA_PARTITION_TAKEN_OVER')).toHaveLength(1);
  });

  it('answers a takeover after it ended with the error it ended with, telling nothing again', () => {
    const { end, producers, takenOver } = sinkEnd();
    const fatal = end.fail(new FatalError('KAFKA_NOT_PERMITTED', 'not permitted'));
    expect(end.takenOver(new Error('fenced'))).toBe(fatal);
    const again = sinkEnd();
    const first = again.end.takenOver(new Error('fenced'));
    expect(again.end.takenOver(new Error('fenced twice'))).toBe(first);
    expect(again.takenOver()).toBe(1);
    expect(producers.fails).toHaveLength(1);
    expect(takenOver()).toBe(0);
  });
});
