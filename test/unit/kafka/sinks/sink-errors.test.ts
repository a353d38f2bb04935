/** What both sinks share of their producer and failures: the producer settings, and how a failure is named. */
import { Partitioners } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { FatalError, RetriableError } from '../../../../src/errors/index.js';
import { IllegalProducerTransition } from '../../../../src/kafka/sinks/producer-lifecycle.js';
import {
  fatalSinkError,
  isRetriedFailure,
  readTransactionFailure,
  sinkProducerConfig,
  transactionalStartError,
} from '../../../../src/kafka/sinks/sink-errors.js';
import { protocolError } from '../../../support/kafka-errors.js';

describe('sinkProducerConfig', () => {
  it('makes an idempotent producer with one request in flight, no topic creation and the Java partitioner', () => {
    expect(sinkProducerConfig()).toEqual({
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
      createPartitioner: Partitioners.DefaultPartitioner,
    });
  });

  it("adds the exactly-once sink's transactional id and transaction timeout", () => {
    expect(
      sinkProducerConfig({ transactionalId: 'calls-connector.c', transactionTimeoutMs: 60_000 }),
    ).toMatchObject({
      transactionalId: 'calls-connector.c',
      transactionTimeout: 60_000,
      idempotent: true,
      maxInFlightRequests: 1,
    });
  });
});

describe('fatalSinkError', () => {
  it('names a programmer error SINK_PROGRAMMER_ERROR, an illegal producer transition included', () => {
    for (const bug of [new TypeError('x is undefined'), new IllegalProducerTransition('idle', 'built')]) {
      const error = fatalSinkError(bug, 'the write', 'check the ACLs');
      expect(error).toBeInstanceOf(FatalError);
      expect(error?.code).toBe('SINK_PROGRAMMER_ERROR');
      expect(error?.cause).toBe(bug);
    }
  });

  it('names a refusal no retry fixes KAFKA_NOT_PERMITTED, saying what Kafka refused and what to check', () => {
    const error = fatalSinkError(protocolError('TOPIC_AUTHORIZATION_FAILED'), 'the write', 'check the ACLs');
    expect(error?.code).toBe('KAFKA_NOT_PERMITTED');
    expect(error?.message).toBe('Kafka refused the write (TOPIC_AUTHORIZATION_FAILED): check the ACLs');
  });

  it('leaves any other failure to be retried', () => {
    expect(fatalSinkError(protocolError('REQUEST_TIMED_OUT'), 'the write', 'check the ACLs')).toBeUndefined();
  });
});

describe('isRetriedFailure', () => {
  it('takes a retriable error for a fact the rule decides, except the sink closing', () => {
    expect(isRetriedFailure(new RetriableError('KAFKA_INSTANCES_UNKNOWN', 'cannot tell'))).toBe(true);
    expect(isRetriedFailure(new RetriableError('KAFKA_SINK_CLOSED', 'closing'))).toBe(false);
    expect(isRetriedFailure(new FatalError('KAFKA_NOT_PERMITTED', 'refused'))).toBe(false);
  });
});

describe('readTransactionFailure', () => {
  it('reads a fencing at any stage as fenced, counted as INVALID_PRODUCER_EPOCH', () => {
    const reading = readTransactionFailure('send', protocolError('INVALID_PRODUCER_EPOCH'));
    expect(reading).toMatchObject({ kind: 'fenced', code: 'INVALID_PRODUCER_EPOCH' });
    expect(reading.kind !== 'fatal' && reading.reason.code).toBe('KAFKA_PRODUCER_FENCED');
  });

  it('reads a failed commit as of unknown outcome, and a failed begin or send as aborted', () => {
    expect(readTransactionFailure('commit', new Error('Connection error'))).toMatchObject({
      kind: 'unknown',
      code: 'END_TXN_FAILED',
      reason: { code: 'KAFKA_COMMIT_OUTCOME_UNKNOWN' },
    });
    expect(readTransactionFailure('begin', new Error('ECONNREFUSED'))).toMatchObject({
      kind: 'aborted',
      code: 'BEGIN_FAILED',
      reason: { code: 'KAFKA_TRANSACTION_ABORTED' },
    });
    expect(readTransactionFailure('send', protocolError('NOT_LEADER_FOR_PARTITION'))).toMatchObject({
      kind: 'aborted',
      code: 'NOT_LEADER_FOR_PARTITION',
    });
  });

  it("reads UNKNOWN_TOPIC_OR_PARTITION (a topic the broker's metadata does not know yet, as right after its creation) as retriable at every stage", () => {
    // kafkajs retries it within a send, and wraps it when its retries run out: a first transaction right after the
    // topics were created must not stop the connector, and its pages are committed again (aborted) or read back.
    const unknownTopic = protocolError('UNKNOWN_TOPIC_OR_PARTITION');
    const retriesOut = Object.assign(new Error('This server does not host this topic-partition'), {
      name: 'KafkaJSNumberOfRetriesExceeded',
      cause: unknownTopic,
    });
    for (const [stage, kind] of [
      ['begin', 'aborted'],
      ['send', 'aborted'],
      ['commit', 'unknown'],
    ] as const)
      for (const error of [unknownTopic, retriesOut])
        expect(readTransactionFailure(stage, error)).toMatchObject({
          kind,
          code: 'UNKNOWN_TOPIC_OR_PARTITION',
        });
  });

  it('reads a programmer error or a refusal as fatal before anything else', () => {
    expect(readTransactionFailure('commit', new RangeError('bad'))).toMatchObject({
      kind: 'fatal',
      error: { code: 'SINK_PROGRAMMER_ERROR' },
    });
    expect(
      readTransactionFailure('send', protocolError('TRANSACTIONAL_ID_AUTHORIZATION_FAILED')),
    ).toMatchObject({ kind: 'fatal', error: { code: 'KAFKA_NOT_PERMITTED' } });
  });
});

describe('transactionalStartError', () => {
  it("keeps the sink's own answer, names a refused id fatal, and anything else KAFKA_UNAVAILABLE", () => {
    const own = new RetriableError('KAFKA_INSTANCES_UNKNOWN', 'cannot tell');
    expect(transactionalStartError(own, 'id')).toBe(own);
    expect(transactionalStartError(protocolError('TRANSACTIONAL_ID_AUTHORIZATION_FAILED'), 'id').code).toBe(
      'KAFKA_NOT_PERMITTED',
    );
    expect(transactionalStartError(new Error('ECONNREFUSED'), 'id').code).toBe('KAFKA_UNAVAILABLE');
  });
});
