/**
 * The exactly-once sink driven by scripted producers, for the unit tests of its parts (test/unit/kafka/sinks):
 * a kafkajs stand-in whose every step a test may script, the sink built over it, and readings of its outcomes.
 */
import type { ProducerBatch, RecordMetadata } from 'kafkajs';
import { expect } from 'vitest';
import { ConnectorError, type FatalError } from '../../src/errors/index.js';
import { pageMessages, type CallEncoder } from '../../src/kafka/records/page-messages.js';
import type { PublishedCheck } from '../../src/kafka/sinks/commit-witnesses.js';
import type { InstanceCheck } from '../../src/kafka/sinks/init-rule.js';
import { TransactionalRecordSink } from '../../src/kafka/sinks/transactional-sink.js';
import type { SinkTransaction, TransactionalProducer } from '../../src/kafka/sinks/transactional-producer.js';
import { silentLogger } from '../../src/logging/logger.js';
import { testMetrics } from './metrics.js';
import type { LocationOffset } from '../../src/sync/model.js';
import type { CommitOutcome, PageCommit } from '../../src/sync/ports.js';
import type { Clock } from '../../src/time/clock.js';
import { sampleCall } from './calls.js';

export const topics = { calls: 'calls', offsets: 'offsets', deadLetters: 'dlq' };
export const encoder: CallEncoder = { encodeKey: (c) => c.uid, encodeValue: (c) => Buffer.from(c.uid) };

/**
 * The instances group's answers when a newer instance starts after this sink's first initialisation: this one
 * is the newest at its start, and no longer afterwards.
 */
export function newerInstanceAfterStart(): () => Promise<boolean> {
  let asked = 0;
  return async () => asked++ === 0;
}

/** What the scripted producers do; every hook may be changed between steps of a test. */
export interface Script {
  /** Awaited by every sendBatch before it records the batch. */
  beforeSend: (batch: ProducerBatch) => Promise<void>;
  commit: () => Promise<void>;
  connect: () => Promise<void>;
}

export class ScriptedKafka {
  readonly script: Script = {
    beforeSend: async () => undefined,
    commit: async () => undefined,
    connect: async () => undefined,
  };
  producersBuilt = 0;
  /** Batches of committed transactions, in commit order. */
  readonly committed: ProducerBatch[][] = [];
  /** Every batch sent, committed or not. */
  readonly sent: ProducerBatch[] = [];

  producer(): TransactionalProducer {
    this.producersBuilt += 1;
    return {
      connect: () => this.script.connect(),
      disconnect: async () => undefined,
      transaction: async (): Promise<SinkTransaction> => {
        const batches: ProducerBatch[] = [];
        return {
          sendBatch: async (batch: ProducerBatch): Promise<RecordMetadata[]> => {
            await this.script.beforeSend(batch);
            batches.push(batch);
            this.sent.push(batch);
            // Where the records landed, as a broker answers: partition 0, after those sent before.
            return (batch.topicMessages ?? []).map((t) => ({
              topicName: t.topic,
              partition: 0,
              errorCode: 0,
              baseOffset: String(this.sent.length * 100),
            }));
          },
          commit: async () => {
            await this.script.commit();
            if (batches.length > 0) this.committed.push(batches);
          },
          abort: async () => undefined,
        };
      },
    };
  }
}

export function page(location: string, cursor: string): PageCommit {
  return {
    locationUid: location,
    calls: [sampleCall({ uid: `${location}-${cursor}`, locationUid: location })],
    deadLetters: [],
    offset: { since: null, cursor, watermark: '2024-05-01T10:00:00Z', boundary: [] },
  };
}

export function sinkWith(
  kafka: ScriptedKafka,
  options: {
    maxPagesPerTransaction?: number;
    maxBytesPerTransaction?: number;
    stored?: () => Map<string, LocationOffset>;
    onFatal?: (e: FatalError) => void;
    onTakenOver?: () => void;
    /** What the instances group says (default: no instance started after this one runs). */
    newest?: InstanceCheck['newest'];
    clock?: Clock;
    /** Whether a record of a write is visible (PublishedCheck); unset, the sink has no check. */
    published?: PublishedCheck['visible'];
    partitionCount?: (topic: string) => Promise<number>;
  } = {},
) {
  const metrics = testMetrics();
  /** The location uids of each read of the offsets topic. */
  const reads: string[][] = [];
  const sink = new TransactionalRecordSink({
    kafka,
    encoder,
    topics,
    connectorName: 'conn',
    transactionalId: 'calls-connector.conn',
    transactionTimeoutMs: 60_000,
    maxPagesPerTransaction: options.maxPagesPerTransaction ?? 50,
    maxBytesPerTransaction: options.maxBytesPerTransaction ?? 1_000_000,
    fencing: { limit: 3, windowMs: 60_000 },
    offsetStore: {
      loadLocations: async (uids) => {
        reads.push([...uids]);
        const stored = options.stored?.() ?? new Map<string, LocationOffset>();
        return new Map([...stored].filter(([uid]) => uids.includes(uid)));
      },
    },
    metrics,
    logger: silentLogger(),
    ...(options.onFatal === undefined ? {} : { onFatal: options.onFatal }),
    ...(options.onTakenOver === undefined ? {} : { onTakenOver: options.onTakenOver }),
    instances: { newest: options.newest ?? (async () => true) },
    ...(options.published === undefined ? {} : { published: { visible: options.published } }),
    ...(options.partitionCount === undefined ? {} : { partitionCount: options.partitionCount }),
    ...(options.clock === undefined ? {} : { clock: options.clock }),
  });
  return { sink, metrics, reads };
}

/**
 * 'resolved' for a page stored, 'superseded', or the error: a 'rejected' outcome's reason (nothing
 * visible, commit again), or the rejection of the promise (the sink writes nothing more).
 */
export async function outcome(
  promise: Promise<CommitOutcome>,
): Promise<ConnectorError | 'resolved' | 'superseded'> {
  return promise.then(
    (result) => {
      if (result.kind === 'rejected') return result.reason;
      return result.kind === 'stored' ? ('resolved' as const) : ('superseded' as const);
    },
    (e: unknown) => {
      expect(e).toBeInstanceOf(ConnectorError);
      return e as ConnectorError;
    },
  );
}

export function pageMessagesBytes(commit: PageCommit): number {
  return pageMessages(commit, encoder, 'conn', new Date()).bytes;
}

/** Offsets-topic record counts of each committed transaction (one per page). */
export function pagesPerTransaction(kafka: ScriptedKafka): number[] {
  return kafka.committed.map((batches) =>
    batches
      .flatMap((b) => b.topicMessages ?? [])
      .filter((t) => t.topic === 'offsets')
      .reduce((n, t) => n + t.messages.length, 0),
  );
}
