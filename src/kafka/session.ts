/**
 * Everything Kafka the connector needs at run time, started in the one order that is safe:
 *
 * 1. topics: created when missing; the offsets topic must be compacted, and accept an offset with a
 *    full boundary (checked before the producer fences anyone: a bad setting must not take over);
 * 2. schemas: `<topic>-value` (and `<topic>-key`) looked up or registered, ids cached;
 * 3. the sink: in exactly-once mode the transactional producer is initialised FIRST: that fences an
 *    older instance and aborts a transaction it left open, which would otherwise hold back the last
 *    stable offset of the offsets topic and so what step 4 can read (single mode: after `beforeProducer`,
 *    where the runtime joins the instances group, so the older instance sees this one and stands by);
 * 4. offsets: the offsets topic is read to its end (read_committed).
 *
 * Contract: `run` calls `KafkaSession.start()` once, hands `sink`, `offsetStore` and `initialOffsets` to
 * the sync engine, and calls `close()` on shutdown (after the engine stopped offering pages).
 */
import { COMPATIBILITY } from '@kafkajs/confluent-schema-registry';
import type { Kafka } from 'kafkajs';
import type { ConnectorConfig } from '../config/schema.js';
import { FatalError } from '../errors/index.js';
import type { Logger } from '../logging/logger.js';
import type { ConnectorMetrics } from '../metrics/metrics.js';
import type { LocationOffset } from '../sync/model.js';
import type { OffsetStore, RecordSink } from '../sync/ports.js';
import { CallCodec, DEFAULT_MAX_VALUE_BYTES } from './avro/call-codec.js';
import { createKafka } from './client.js';
import { readCommittedFixInstalled } from './kafkajs-read-committed-fix.js';
import { KafkaOffsetStore } from './offsets/kafka-offset-store.js';
import { boundaryByteBudget, verifyOffsetRecordFits } from './offsets/offset-size.js';
import { createSchemaRegistry } from './registry.js';
import { compressionType } from './compression.js';
import { AtLeastOnceRecordSink } from './sinks/at-least-once-sink.js';
import {
  TransactionalRecordSink,
  transactionalIdFor,
  type InstanceCheck,
} from './sinks/transactional-sink.js';
import { maxCallValueBytes, topicMaxMessageBytesIfKnown } from './topic-limits.js';
import { ensureConnectorTopics } from './topics.js';
import { systemClock, type Clock } from '../time/clock.js';

export interface KafkaSessionOptions {
  config: Pick<ConnectorConfig, 'kafka' | 'schemaRegistry'> & { connector: { name: string } };
  /** poll.boundaryCap, checked against the offsets topic's max.message.bytes (see offset-size.ts). */
  boundaryCap?: number;
  logger: Logger;
  metrics: ConnectorMetrics;
  /** Called once if the sink gives up for good (e.g. fenced by another instance too often). */
  onFatal?: (error: FatalError) => void;
  /** An existing client (tests); otherwise built from config. */
  kafka?: Kafka;
  /** The process's clock (default: the system clock), for the codec's and the sinks' times. */
  clock?: Clock;
  /**
   * Single mode: run after topics and schemas are ready and before the producer's first initialisation (the
   * runtime joins the instances group there, so that an older instance sees this one before it is fenced).
   */
  beforeProducer?: (kafka: Kafka) => Promise<void>;
  /** Single mode: Kafka's word on other running instances, asked before any re-initialisation of the producer. */
  instances?: InstanceCheck;
}

/** A RecordSink the session starts and closes. */
export type SessionSink = RecordSink & { start(): Promise<void>; close(timeoutMs?: number): Promise<void> };

/** What both sessions (single and distributed, see group/distributed-session.ts) share: topics, codec, store. */
export interface KafkaGround {
  kafka: Kafka;
  codec: CallCodec;
  offsetStore: KafkaOffsetStore;
  /** Bytes a location's boundary may take in its stored offset (offset-size.ts, boundaryByteBudget). */
  boundaryMaxBytes: number;
  /**
   * Builds a sink (not started); `transactionalId` is used in exactly-once mode only. `onTakenOver` (distributed
   * mode): a fencing means the transactional id's partition was taken over (see TransactionalRecordSink).
   */
  buildSink(
    transactionalId: string,
    onFatal?: (error: FatalError) => void,
    onTakenOver?: () => void,
  ): SessionSink;
}

/**
 * Steps 1 and 2 of the module comment, and the means of step 3: topics checked or created, schemas
 * registered, the offset store, and a sink factory. Opens nothing that needs closing.
 */
export async function prepareKafka(options: KafkaSessionOptions): Promise<KafkaGround> {
  const { config, logger, metrics } = options;
  const clock = options.clock ?? systemClock;
  const connectorName = config.connector.name;
  const clientId = config.kafka.clientId ?? connectorName;
  const log = logger.child({ component: 'kafka-session' });
  // Exactly-once reads its offsets back read_committed: without the fix an aborted offset record taken for
  // committed would move a location past pages never published (loss). Refused, not warned (createKafka warns).
  if (config.kafka.exactlyOnce && !readCommittedFixInstalled())
    throw new FatalError(
      'KAFKA_READ_COMMITTED_FIX_MISSING',
      'kafkajs was loaded before its read_committed fix, or its internals changed (see src/kafka/kafkajs-read-committed-fix.ts): kafka.exactlyOnce cannot be guaranteed, so the connector does not start',
    );
  const kafka = options.kafka ?? createKafka({ config: config.kafka, connectorName, logger });

  await ensureConnectorTopics(kafka, config.kafka);
  let offsetsMaxMessageBytes: number | undefined;
  if (options.boundaryCap !== undefined) {
    const admin = kafka.admin();
    await admin.connect();
    try {
      offsetsMaxMessageBytes = await verifyOffsetRecordFits(admin, {
        offsetsTopic: config.kafka.offsetsTopic,
        boundaryCap: options.boundaryCap,
        connectorName,
      });
    } finally {
      await admin.disconnect();
    }
  }
  log.info(
    { topic: config.kafka.topic, offsetsTopic: config.kafka.offsetsTopic, dlqTopic: config.kafka.dlqTopic },
    'topics ready',
  );

  // The most one record, and one send to one partition, may take: under every known limit (the calls
  // topic's max.message.bytes, kafka.maxBytesPerTransaction). A larger call becomes a dead letter
  // (ITEM_TOO_LARGE); a larger page is sent in parts (chunkTopicMessages).
  const maxSendBytes = maxCallValueBytes({
    codecDefault: DEFAULT_MAX_VALUE_BYTES,
    maxBytesPerTransaction: config.kafka.maxBytesPerTransaction,
    topicMaxMessageBytes: await topicMaxMessageBytesIfKnown(kafka, config.kafka.topic),
  });
  const codec = await CallCodec.create({
    registry: createSchemaRegistry(config.schemaRegistry, clientId),
    topic: config.kafka.topic,
    keyFormat: config.kafka.keyFormat,
    connectorName,
    clock,
    compatibility: COMPATIBILITY[config.schemaRegistry.compatibility],
    maxValueBytes: maxSendBytes,
  });
  log.info({ valueSchemaId: codec.valueSchemaId }, 'schemas registered');

  const offsetStore = new KafkaOffsetStore({
    kafka,
    topic: config.kafka.offsetsTopic,
    connectorName,
    groupIdPrefix: `${clientId}-offsets-reader`,
    loadTimeoutMs: config.kafka.offsetsLoadTimeoutMs,
  });
  const topics = {
    calls: config.kafka.topic,
    offsets: config.kafka.offsetsTopic,
    deadLetters: config.kafka.dlqTopic,
  };
  const buildSink = (
    transactionalId: string,
    onFatal?: (error: FatalError) => void,
    onTakenOver?: () => void,
  ): SessionSink =>
    config.kafka.exactlyOnce
      ? new TransactionalRecordSink({
          kafka,
          encoder: codec,
          topics,
          connectorName,
          transactionalId,
          transactionTimeoutMs: config.kafka.transactionTimeoutMs,
          maxPagesPerTransaction: config.kafka.maxPagesPerTransaction,
          maxBytesPerTransaction: maxSendBytes,
          compression: compressionType(config.kafka.compression),
          fencing: { limit: config.kafka.fencedRebuildLimit, windowMs: config.kafka.fencedWindowMs },
          offsetStore,
          metrics,
          logger,
          clock,
          ...(onFatal === undefined ? {} : { onFatal }),
          ...(onTakenOver === undefined ? {} : { onTakenOver }),
          ...(options.instances === undefined ? {} : { instances: options.instances }),
        })
      : new AtLeastOnceRecordSink({
          kafka,
          encoder: codec,
          topics,
          connectorName,
          maxBytesPerSend: maxSendBytes,
          compression: compressionType(config.kafka.compression),
          ...(onFatal === undefined ? {} : { onFatal }),
          metrics,
          logger,
          clock,
        });
  return {
    kafka,
    codec,
    offsetStore,
    boundaryMaxBytes: boundaryByteBudget(offsetsMaxMessageBytes),
    buildSink,
  };
}

export class KafkaSession {
  private constructor(
    readonly kafka: Kafka,
    readonly sink: SessionSink,
    readonly offsetStore: OffsetStore,
    /** Offsets as loaded at start, by location uid. */
    readonly initialOffsets: Map<string, LocationOffset>,
    readonly codec: CallCodec,
    /** Bytes a location's boundary may take in its stored offset (offset-size.ts, boundaryByteBudget). */
    readonly boundaryMaxBytes: number,
  ) {}

  static async start(options: KafkaSessionOptions): Promise<KafkaSession> {
    const { config, logger } = options;
    const log = logger.child({ component: 'kafka-session' });
    const ground = await prepareKafka(options);
    await options.beforeProducer?.(ground.kafka);
    const sink = ground.buildSink(transactionalIdFor(config.connector.name), options.onFatal);
    await sink.start(); // before loading offsets: see the module comment
    log.info({ exactlyOnce: config.kafka.exactlyOnce }, 'producer ready');

    let initialOffsets: Map<string, LocationOffset>;
    try {
      initialOffsets = await ground.offsetStore.loadAll();
    } catch (error) {
      await sink.close();
      throw error;
    }
    log.info({ locations: initialOffsets.size }, 'offsets loaded');
    return new KafkaSession(
      ground.kafka,
      sink,
      ground.offsetStore,
      initialOffsets,
      ground.codec,
      ground.boundaryMaxBytes,
    );
  }

  /** Closes the sink: commits what is queued, within `timeoutMs` when given (see TransactionalRecordSink.close). */
  async close(timeoutMs?: number): Promise<void> {
    await this.sink.close(timeoutMs);
  }
}
