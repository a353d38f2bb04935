/**
 * What both RecordSinks share about their producer and its failures: the producer settings, and how a failure is
 * named by what happens next.
 *
 * - a programmer error (TypeError, RangeError, an illegal producer transition): fatal (SINK_PROGRAMMER_ERROR).
 *   The process stops so that a supervisor restarts it (distributed mode: the group moves its partitions).
 *   Retrying a bug would only repeat it, and standing still would stop every location of the group for good;
 * - an authorization or configuration refusal (TRANSACTIONAL_ID_AUTHORIZATION_FAILED, ...): fatal
 *   (KAFKA_NOT_PERMITTED): no retry or rebuild fixes it, a person must change ACLs or settings;
 * - anything else Kafka answered is retriable: the sink reports it as a fact (aborted, unknown) to the one rule
 *   (sync/location/commit-outcome.ts), or waits for Kafka (KAFKA_UNAVAILABLE).
 */
import { Partitioners, type ProducerConfig } from 'kafkajs';
import { ConnectorError, FatalError, RetriableError } from '../../errors/index.js';
import {
  describeKafkaError,
  fatalKafkaErrorType,
  isFencedError,
  isProgrammerError,
  kafkaErrorTypes,
} from '../client/kafka-errors.js';

/** The exactly-once sink's part of the producer settings. */
export interface TransactionalSettings {
  transactionalId: string;
  transactionTimeoutMs: number;
}

/**
 * The producer settings of both sinks: idempotent (no duplicates from its own retries) with one request in flight
 * (kafkajs numbers a batch's records when it builds the request, so two requests in flight would share sequence
 * numbers); a send creates no topic; and murmur2 over the key bytes as the Java client (DefaultPartitioner), so
 * Java and Streams consumers co-partition with us. `transactional`: the exactly-once sink's id and timeout.
 */
export function sinkProducerConfig(transactional?: TransactionalSettings): ProducerConfig {
  return {
    ...(transactional !== undefined && {
      transactionalId: transactional.transactionalId,
      transactionTimeout: transactional.transactionTimeoutMs,
    }),
    idempotent: true,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
    createPartitioner: Partitioners.DefaultPartitioner,
  };
}

/** SINK_PROGRAMMER_ERROR for a bug met in a sink, or undefined when `error` is Kafka's answer. */
export function programmerError(error: unknown): FatalError | undefined {
  if (!isProgrammerError(error)) return undefined;
  return new FatalError(
    'SINK_PROGRAMMER_ERROR',
    `the Kafka sink hit a programmer error; the process stops so that a supervisor restarts it: ${describeKafkaError(error)}`,
    { cause: error },
  );
}

/**
 * KAFKA_NOT_PERMITTED when Kafka refused for good (ACLs, configuration), or undefined. The message reads
 * "Kafka refused <refused> (<type>): <advice>".
 */
export function notPermittedError(error: unknown, refused: string, advice: string): FatalError | undefined {
  const fatalType = fatalKafkaErrorType(error);
  if (fatalType === undefined) return undefined;
  return new FatalError('KAFKA_NOT_PERMITTED', `Kafka refused ${refused} (${fatalType}): ${advice}`, {
    cause: error,
  });
}

/** The sink's fatal error for a failure, a programmer error first, or undefined when the failure is retriable. */
export function fatalSinkError(error: unknown, refused: string, advice: string): FatalError | undefined {
  return programmerError(error) ?? notPermittedError(error, refused, advice);
}

/** KAFKA_UNAVAILABLE: the producer could not be made ready now (`what`: which producer, what was tried). */
export function kafkaUnavailable(what: string, error: unknown): RetriableError {
  return new RetriableError('KAFKA_UNAVAILABLE', `${what}: ${describeKafkaError(error)}`, { cause: error });
}

/**
 * Whether a failure met before a page's write is a fact for the rule (nothing was written: the page is committed
 * again) rather than what rejects the page (a fatal error, or the sink closing: it writes nothing more).
 */
export function isRetriedFailure(error: unknown): error is RetriableError {
  return error instanceof RetriableError && error.code !== 'KAFKA_SINK_CLOSED';
}

/**
 * What a failed transaction of the exactly-once sink means, from the stage that failed and Kafka's error
 * (transactional-sink.ts acts on it: stands down, rebuilds the producer, reports the facts to the rule):
 * - fatal: a programmer error or a refusal (above);
 * - fenced (INVALID_PRODUCER_EPOCH): the coordinator aborted the transaction for its age, or a newer instance
 *   initialised the id; nothing of the transaction is visible;
 * - unknown: the commit (EndTxn) failed, so the coordinator may or may not have committed;
 * - aborted: beginning or sending failed; nothing of the transaction is visible.
 * `code`: what the discarded producer is counted under (metric producerRecreated).
 */
export type TransactionFailureReading =
  | { kind: 'fatal'; error: FatalError }
  | { kind: 'fenced' | 'unknown' | 'aborted'; code: string; reason: RetriableError };

export function readTransactionFailure(
  stage: 'begin' | 'send' | 'commit',
  original: unknown,
): TransactionFailureReading {
  const message = describeKafkaError(original);
  const fatal = fatalSinkError(
    original,
    'the transaction',
    `check the ACLs and kafka.* settings. ${message}`,
  );
  if (fatal !== undefined) return { kind: 'fatal', error: fatal };
  if (isFencedError(original))
    return {
      kind: 'fenced',
      code: 'INVALID_PRODUCER_EPOCH',
      reason: new RetriableError(
        'KAFKA_PRODUCER_FENCED',
        `the producer was fenced; it is initialised again only while Kafka shows no other instance running (the transaction outlived kafka.transactionTimeoutMs); nothing of the transaction is visible: ${message}`,
        { cause: original },
      ),
    };
  const type = kafkaErrorTypes(original)[0];
  if (stage === 'commit')
    return {
      kind: 'unknown',
      code: type ?? 'END_TXN_FAILED',
      reason: new RetriableError(
        'KAFKA_COMMIT_OUTCOME_UNKNOWN',
        `committing the transaction failed, and the offsets read back after rebuilding the producer show it did not take effect (or cannot tell): ${message}`,
        { cause: original },
      ),
    };
  return {
    kind: 'aborted',
    code: type ?? (stage === 'begin' ? 'BEGIN_FAILED' : 'SEND_FAILED'),
    reason: new RetriableError(
      'KAFKA_TRANSACTION_ABORTED',
      `the transaction was not committed; nothing of it is visible: ${message}`,
      { cause: original },
    ),
  };
}

/**
 * Why the exactly-once sink could not start: its own answer (a newer instance runs, or it cannot tell yet), Kafka
 * refused its id for good, or Kafka cannot be reached yet.
 */
export function transactionalStartError(error: unknown, transactionalId: string): ConnectorError {
  if (error instanceof ConnectorError) return error;
  return (
    notPermittedError(
      error,
      'to initialise the transactional producer',
      `check the ACLs for transactional id ${transactionalId}`,
    ) ?? kafkaUnavailable('cannot initialise the transactional producer', error)
  );
}

/** Why pages prepared under an older producer generation were not written (their offsets are read back). */
export function fromOldProducer(
  pageGenerations: ReadonlyArray<number | undefined>,
  generation: number,
): RetriableError {
  return new RetriableError(
    'KAFKA_PAGE_FROM_OLD_PRODUCER',
    `the page was prepared under an older producer generation, and the producer was initialised again since (generation ${generation}): nothing of it was written; its location's stored offset was read`,
    { details: { pageGenerations: [...new Set(pageGenerations)], generation } },
  );
}
