/**
 * The sink of one producer scope, of the mode the configuration chose: exactly once (kafka.exactlyOnce), a
 * TransactionalRecordSink whose transactional id names the scope (transactional-id.ts); at least once, an
 * AtLeastOnceRecordSink (its idempotent producer has no id to fence by: only `onFatal` applies). The session
 * (kafka/session.ts) readies what the sinks share (codec, offset store, topics) and builds them through this.
 */
import type { CompressionTypes } from 'kafkajs';
import type { FatalError } from '../../errors/index.js';
import type { Logger } from '../../logging/logger.js';
import type { RecordSink } from '../../sync/ports.js';
import type { Clock } from '../../time/clock.js';
import type { CallEncoder, SignalDoneMessage, SinkTopics } from '../records/page-messages.js';
import { AtLeastOnceRecordSink, type AtLeastOnceSinkOptions } from './at-least-once-sink.js';
import type { PublishedCheck } from './commit-witnesses.js';
import type { FencingBudgetOptions, InstanceCheck } from './init-rule.js';
import type { LocationOffsetReader } from './settlement.js';
import { partitionTransactionalId, transactionalIdFor } from './transactional-id.js';
import { TransactionalRecordSink, type TransactionalSinkOptions } from './transactional-sink.js';

/**
 * The sinks' settings, mapped from configuration by the start-up step that opens the session
 * (runtime/steps/kafka.ts, `sinkSettings`); the transactional ones serve exactly-once mode only.
 */
export interface SinkSettings {
  /** Codec of the record batches (kafka.compression). */
  compression: CompressionTypes;
  transactionTimeoutMs: number;
  maxPagesPerTransaction: number;
  /** Rebuilds allowed after fencings (init-rule.ts). */
  fencing: FencingBudgetOptions;
}

/** The metrics the sinks update. */
export type SinkMetrics = TransactionalSinkOptions['metrics'] & AtLeastOnceSinkOptions['metrics'];

/** A RecordSink the session starts and closes. */
export type SessionSink = RecordSink & { start(): Promise<void>; close(timeoutMs?: number): Promise<void> };

/** Single mode's sink: the connector's one producer for every partition (transactionalIdFor). */
export interface ConnectorSinkOptions {
  scope: 'connector';
  onFatal?: (error: FatalError) => void;
  /** Kafka's word on other running instances, asked before any initialisation (init-rule.ts). */
  instances?: InstanceCheck;
}

/** Distributed mode's sink: partition P's producer (partitionTransactionalId). */
export interface PartitionSinkOptions {
  scope: 'partition';
  partition: number;
  onFatal?: (error: FatalError) => void;
  /** A fencing, or any loss of the producer, means the partition was taken over. */
  onTakenOver: () => void;
}

/** What every sink of a session shares. */
export interface SinkParts {
  exactlyOnce: boolean;
  settings: SinkSettings;
  /** Builds producers: a kafkajs `Kafka` client. */
  kafka: TransactionalSinkOptions['kafka'] & AtLeastOnceSinkOptions['kafka'];
  encoder: CallEncoder;
  topics: SinkTopics;
  connectorName: string;
  /** Exactly once: the `done` outcome of a signal a page completes, written in its transaction. */
  signalDone?: SignalDoneMessage;
  /** The most bytes one send may carry (kafka.maxBytesPerTransaction, under the topics' limits). */
  maxSendBytes: number;
  /** Exactly once: what a failed commit left (settlement.ts). */
  offsetStore: LocationOffsetReader;
  published: PublishedCheck;
  partitionCount: (topic: string) => Promise<number>;
  metrics: SinkMetrics;
  logger: Logger;
  clock: Clock;
}

/** Builds a scope's sink, not started. */
export function buildScopeSink(
  parts: SinkParts,
  scope: ConnectorSinkOptions | PartitionSinkOptions,
): SessionSink {
  const { kafka, encoder, topics, connectorName, settings, metrics, logger, clock } = parts;
  const shared = { kafka, encoder, topics, connectorName, compression: settings.compression };
  const onFatal = scope.onFatal === undefined ? {} : { onFatal: scope.onFatal };
  if (!parts.exactlyOnce)
    return new AtLeastOnceRecordSink({
      ...shared,
      maxBytesPerSend: parts.maxSendBytes,
      ...{ ...onFatal, metrics, logger, clock },
    });
  return new TransactionalRecordSink({
    ...shared,
    transactionalId:
      scope.scope === 'connector'
        ? transactionalIdFor(connectorName)
        : partitionTransactionalId(connectorName, scope.partition),
    transactionTimeoutMs: settings.transactionTimeoutMs,
    maxPagesPerTransaction: settings.maxPagesPerTransaction,
    maxBytesPerTransaction: parts.maxSendBytes,
    fencing: settings.fencing,
    ...(parts.signalDone !== undefined && { signalDone: parts.signalDone }),
    ...{ offsetStore: parts.offsetStore, published: parts.published, partitionCount: parts.partitionCount },
    ...{ ...onFatal, metrics, logger, clock },
    ...(scope.scope === 'partition'
      ? { onTakenOver: scope.onTakenOver }
      : scope.instances === undefined
        ? {}
        : { instances: scope.instances }),
  });
}
