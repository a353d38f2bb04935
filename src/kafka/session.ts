/**
 * Everything Kafka the connector needs at run time, started in the one order that is safe:
 *
 * 1. topics: created when missing; the offsets topic must be compacted, and accept an offset with a
 *    full boundary (checked before the producer fences anyone: a bad setting must not take over);
 * 2. schemas: `<topic>-value` (and `<topic>-key`) looked up or registered, ids cached;
 * 3. a sink per producer scope, opened as the partitions of the offsets topic are taken over
 *    (runtime/partition-handover.ts): in exactly-once mode its transactional producer is initialised FIRST:
 *    that fences the scope's previous writer and aborts a transaction it left open, which would otherwise hold
 *    back the last stable offset of the offsets topic and so what step 4 can read;
 * 4. offsets: the scope's partitions of the offsets topic are read to their end (read_committed).
 *
 * Producer scopes (`ScopedKafkaSession`; their sinks built by sinks/sink-factory.ts, their transactional ids named
 * by sinks/transactional-id.ts): single mode has one, the connector (`openConnectorSink`, every partition,
 * re-initialised only when the instances group shows no other instance: option `instances`); distributed mode one
 * per partition P taken over (`openPartitionSink`; any producer loss drops P, `takenOver`). At least once
 * (`kafka.exactlyOnce: false`), one idempotent producer serves every scope; nothing fences a paused instance
 * then, so a zombie may publish a page the new owner publishes too: duplicates, which at-least-once allows,
 * never loss.
 *
 * Contract: `ScopedKafkaSession.start()` once (it opens no producer); a scope's sink before its offsets are read;
 * `close()` at shutdown after every scope's sink was closed (it closes the shared at-least-once sink).
 * The runtime opens scopes through the partition handover (runtime/steps/ownership.ts); the tests' one-scope form
 * (the connector scope, its offsets read at once) is test/support/kafka.ts `startKafkaSession`. The sinks' settings
 * come mapped from configuration (`sinks`: runtime/steps/kafka.ts, `sinkSettings`).
 */
import { hostname } from 'node:os';
import { COMPATIBILITY } from '@kafkajs/confluent-schema-registry';
import type { ConnectorConfig } from '../config/schema.js';
import { FatalError } from '../errors/index.js';
import type { Logger } from '../logging/logger.js';
import type { LocationOffset } from '../sync/model.js';
import { CallCodec, DEFAULT_MAX_VALUE_BYTES } from './avro/call-codec.js';
import { createKafka } from './client/kafkajs-client.js';
import type { KafkaClient } from './client/port.js';
import { readCommittedFixInstalled } from './client/kafkajs-read-committed-fix.js';
import { KafkaOffsetStore } from './offsets/kafka-offset-store.js';
import { boundaryByteBudget, verifyOffsetRecordFits } from './offsets/offset-size.js';
import { locationPartition } from './group/location-partition.js';
import { createSchemaRegistry } from './avro/registry.js';
import {
  buildScopeSink,
  type ConnectorSinkOptions,
  type PartitionSinkOptions,
  type SessionSink,
  type SinkMetrics,
  type SinkSettings,
} from './sinks/sink-factory.js';
import type { InstanceCheck } from './sinks/init-rule.js';
import { maxCallValueBytes, topicMaxMessageBytesIfKnown } from './topics/topic-limits.js';
import { ensureConnectorTopics, signalsTopicSpec, topicPartitionCount } from './topics/topics.js';
import { signalDoneMessage } from './signals/signal-topic.js';
import { recordsVisibility } from './topics/records-visible.js';
import { assertHighWatermarksListable } from './topics/stable-offsets.js';
import { systemClock, type Clock } from '../time/clock.js';

export type { SessionSink, SinkSettings } from './sinks/sink-factory.js';

export interface KafkaSessionOptions {
  config: Pick<ConnectorConfig, 'kafka' | 'schemaRegistry'> & {
    connector: { name: string; mode?: ConnectorConfig['connector']['mode'] };
  };
  /** poll.boundaryCap, checked against the offsets topic's max.message.bytes (see offset-size.ts). */
  boundaryCap?: number;
  sinks: SinkSettings;
  logger: Logger;
  metrics: SinkMetrics;
  /** Called once if the sink gives up for good (e.g. fenced by another instance too often). */
  onFatal?: (error: FatalError) => void;
  /** An existing client (tests); otherwise built from config. */
  kafka?: KafkaClient;
  /** The process's clock (default: the system clock), for the codec's and the sinks' times. */
  clock?: Clock;
  /** This instance as signal outcomes name it (default: host and pid). */
  instance?: string;
}

/** What prepareKafka readies: topics, schemas (the codec the sinks encode with), offset store and a sink factory. */
export interface KafkaGround {
  kafka: KafkaClient;
  offsetStore: KafkaOffsetStore;
  /** Bytes a location's boundary may take in its stored offset (offset-size.ts, boundaryByteBudget). */
  boundaryMaxBytes: number;
  /**
   * Builds a sink (not started) for one producer scope. At least once, only `onFatal` applies: the producer is
   * idempotent, with no transactional id to fence by.
   */
  buildSink(scope: ConnectorSinkOptions | PartitionSinkOptions): SessionSink;
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
      'kafkajs was loaded before its read_committed fix, or its internals changed (see src/kafka/client/kafkajs-read-committed-fix.ts): kafka.exactlyOnce cannot be guaranteed, so the connector does not start',
    );
  const kafka = options.kafka ?? createKafka({ config: config.kafka, connectorName, logger });
  if (config.kafka.exactlyOnce) assertHighWatermarksListable(kafka);

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
    // Exactly-once: every read (at start, at a takeover, a sink's read-back) waits for the transactions open
    // ahead of it, so that "still the committed offset" proves an abort (topics/stable-offsets.ts).
    awaitOpenTransactions: config.kafka.exactlyOnce,
    logger: log,
  });
  const signalsTopic = signalsTopicSpec(config.kafka).topic;
  const topics = {
    calls: config.kafka.topic,
    offsets: config.kafka.offsetsTopic,
    deadLetters: config.kafka.dlqTopic,
    ...(config.kafka.exactlyOnce && { signals: signalsTopic }),
  };
  const parts = {
    ...{ exactlyOnce: config.kafka.exactlyOnce, settings: options.sinks, kafka, encoder: codec, topics },
    ...(config.kafka.exactlyOnce && {
      signalDone: signalDoneMessage({
        connectorName,
        // The signals topic is partitioned like the offsets topic (signal-topic.ts ensureSignalTopic).
        partitionCount: await offsetStore.partitionCount(),
        instance: options.instance ?? `${hostname()}-${process.pid}`,
      }),
    }),
    ...{ connectorName, maxSendBytes, offsetStore, metrics, logger, clock },
    published: recordsVisibility(kafka, {
      groupIdPrefix: `${clientId}-offsets-reader`,
      timeoutMs: config.kafka.offsetsLoadTimeoutMs,
      clock,
    }),
    partitionCount: (topic: string) => topicPartitionCount(kafka, topic),
  };
  return {
    kafka,
    offsetStore,
    boundaryMaxBytes: boundaryByteBudget(offsetsMaxMessageBytes),
    buildSink: (scope) => buildScopeSink(parts, scope),
  };
}

/** Where a scope's offsets are read from (see ScopedKafkaSession.loadOffsets). */
export type OffsetScope = 'connector' | readonly number[];

export class ScopedKafkaSession {
  /** At least once: the one idempotent producer of every scope, started with the first scope's sink. */
  private shared: Promise<SessionSink> | null = null;

  private constructor(
    private readonly ground: KafkaGround,
    private readonly options: KafkaSessionOptions,
    /** Partitions of the offsets topic: the most instances that can share the work. */
    readonly partitionCount: number,
  ) {}

  static async start(options: KafkaSessionOptions): Promise<ScopedKafkaSession> {
    const ground = await prepareKafka(options);
    const { config, logger } = options;
    // Described once, by the offset store (its scoped reads need the count too): FatalError when it has none.
    const partitionCount = await ground.offsetStore.partitionCount();
    if (partitionCount === 1 && config.connector.mode === 'distributed')
      logger.warn(
        { offsetsTopic: config.kafka.offsetsTopic },
        'the offsets topic has 1 partition: in distributed mode only one instance at a time does work (parallelism 1); a topic created with kafka.offsetsTopicPartitions spreads the locations, but an existing topic keeps its count',
      );
    return new ScopedKafkaSession(ground, options, partitionCount);
  }

  get kafka(): KafkaClient {
    return this.ground.kafka;
  }

  get offsetStore(): KafkaOffsetStore {
    return this.ground.offsetStore;
  }

  /** Bytes a location's boundary may take in its stored offset (offset-size.ts, boundaryByteBudget). */
  get boundaryMaxBytes(): number {
    return this.ground.boundaryMaxBytes;
  }

  /** Every partition of the offsets topic (single mode owns them all). */
  get partitions(): number[] {
    return Array.from({ length: this.partitionCount }, (_, partition) => partition);
  }

  /**
   * Builds and starts the connector scope's sink (single mode): exactly-once, initialising it fences an older
   * instance of the same connector name and settles its open transaction. `instances`: asked before any
   * re-initialisation (single mode passes its membership of the instances group, joined before this call).
   */
  async openConnectorSink(instances?: InstanceCheck): Promise<SessionSink> {
    const { config } = this.options;
    let sink: SessionSink;
    if (config.kafka.exactlyOnce) {
      sink = this.ground.buildSink({
        scope: 'connector',
        ...this.fatalHandler(),
        ...(instances && { instances }),
      });
      await sink.start();
    } else sink = sharedScope(await this.sharedSink());
    this.options.logger
      .child({ component: 'kafka-session' })
      .info({ exactlyOnce: config.kafka.exactlyOnce }, 'producer ready');
    return sink;
  }

  /** Builds and starts partition P's sink (exactly-once: initialising it fences P's previous owner). */
  async openPartitionSink(
    partition: number,
    takenOver: () => void,
  ): Promise<{
    commitPage: SessionSink['commitPage'];
    generation?: () => number;
    close(timeoutMs?: number): Promise<void>;
  }> {
    if (!this.options.config.kafka.exactlyOnce) return sharedScope(await this.sharedSink());
    const sink = this.ground.buildSink({
      scope: 'partition',
      partition,
      onTakenOver: takenOver,
      ...this.fatalHandler(),
    });
    await sink.start();
    return sink;
  }

  /**
   * Reads a scope's offsets to the end of the offsets topic (read_committed), after its sink was opened.
   * The connector scope reads the whole topic, one read shared by concurrent callers (KafkaOffsetStore.loadAll,
   * which the sink's own settling uses too). Partitions: only those, and a location's offset found outside its
   * partition (the topic's partition count changed) is fatal for the whole process (`onFatal`): no owner could
   * see its history.
   */
  async loadOffsets(scope: OffsetScope): Promise<Map<string, LocationOffset>> {
    if (scope === 'connector') return this.ground.offsetStore.loadAll();
    const name = this.options.config.connector.name;
    try {
      return await this.ground.offsetStore.loadPartitions(scope, (uid) =>
        locationPartition(name, uid, this.partitionCount),
      );
    } catch (error) {
      if (error instanceof FatalError && error.code === 'KAFKA_OFFSETS_TOPIC_REPARTITIONED')
        this.options.onFatal?.(error);
      throw error;
    }
  }

  /** Distributed mode's name for reading partitions (see loadOffsets). */
  loadPartitions(partitions: readonly number[]): Promise<Map<string, LocationOffset>> {
    return this.loadOffsets(partitions);
  }

  /** Closes the shared at-least-once sink, if one was started. */
  async close(timeoutMs?: number): Promise<void> {
    const shared = await this.shared?.catch(() => null);
    await shared?.close(timeoutMs);
  }

  private fatalHandler(): { onFatal?: (error: FatalError) => void } {
    return this.options.onFatal === undefined ? {} : { onFatal: this.options.onFatal };
  }

  private sharedSink(): Promise<SessionSink> {
    this.shared ??= (async () => {
      const sink = this.ground.buildSink({ scope: 'connector', ...this.fatalHandler() });
      await sink.start();
      return sink;
    })().catch((error: unknown) => {
      this.shared = null; // the next scope taken over tries again
      throw error;
    });
    return this.shared;
  }
}

/** A scope's view of the shared at-least-once sink: closing the scope leaves it open (the session closes it). */
function sharedScope(shared: SessionSink): SessionSink {
  return {
    commitPage: (commit) => shared.commitPage(commit),
    start: () => Promise.resolve(),
    close: () => Promise.resolve(),
  };
}
