import { describe, expect, it } from 'vitest';
import {
  describeKafkaError,
  fatalKafkaErrorType,
  isFencedError,
  kafkaErrorTypes,
} from '../../../../src/kafka/client/kafka-errors.js';
import { protocolError } from '../../../support/kafka-errors.js';

describe('kafka error classification', () => {
  it('finds protocol error types through causes, original errors and aggregates', () => {
    const retried = Object.assign(new Error('retries exceeded'), {
      cause: protocolError('INVALID_PRODUCER_EPOCH'),
    });
    const aggregate = Object.assign(new Error('several'), {
      errors: [
        protocolError('NOT_LEADER_FOR_PARTITION'),
        { originalError: protocolError('MESSAGE_TOO_LARGE') },
      ],
    });
    expect(kafkaErrorTypes(retried)).toEqual(['INVALID_PRODUCER_EPOCH']);
    expect(kafkaErrorTypes(aggregate)).toEqual(['NOT_LEADER_FOR_PARTITION', 'MESSAGE_TOO_LARGE']);
    expect(kafkaErrorTypes('a string')).toEqual([]);
  });

  it('treats INVALID_PRODUCER_EPOCH and PRODUCER_FENCED as fencing', () => {
    expect(isFencedError(protocolError('INVALID_PRODUCER_EPOCH'))).toBe(true);
    expect(isFencedError(protocolError('PRODUCER_FENCED'))).toBe(true);
    expect(isFencedError(protocolError('NOT_COORDINATOR'))).toBe(false);
  });

  it('names authorization failures as fatal', () => {
    expect(fatalKafkaErrorType(protocolError('TRANSACTIONAL_ID_AUTHORIZATION_FAILED'))).toBe(
      'TRANSACTIONAL_ID_AUTHORIZATION_FAILED',
    );
    expect(fatalKafkaErrorType(protocolError('REQUEST_TIMED_OUT'))).toBeUndefined();
  });

  it('describes an error with its types', () => {
    expect(describeKafkaError(protocolError('MESSAGE_TOO_LARGE'))).toBe(
      'broker said MESSAGE_TOO_LARGE [MESSAGE_TOO_LARGE]',
    );
  });

  it('does not loop on cyclic causes', () => {
    const a: Error & { cause?: unknown } = protocolError('A');
    a.cause = a;
    expect(kafkaErrorTypes(a)).toEqual(['A']);
  });
});
