/** Kafka helpers for integration tests: a quiet client on the chosen stack, topic creation, polling. */
import { Kafka, logLevel, type ITopicConfig } from 'kafkajs';
import { afterEach } from 'vitest';
import {
  kafkaSchema,
  schemaRegistrySchema,
  type KafkaConfig,
  type SchemaRegistryConfig,
} from '../../src/config/schema.js';
import type { FatalError } from '../../src/errors/index.js';
import { applyKafkajsIdleTimerFix } from '../../src/kafka/client/kafkajs-idle-timer-fix.js';
import { ScopedKafkaSession, type KafkaSessionOptions, type SessionSink } from '../../src/kafka/session.js';
import { sinkSettings } from '../../src/runtime/steps/kafka.js';
import { silentLogger } from '../../src/logging/logger.js';
import { type ConnectorMetrics } from '../../src/metrics/metrics.js';
import { testMetrics } from './metrics.js';
import { whenTopicsLed } from '../../src/kafka/topics/leaders-settle.js';
import { readTopicToEnd, type TopicRecord } from '../../src/kafka/topics/topic-reader.js';
import type { Call, LocationOffset } from '../../src/sync/model.js';
import type { OffsetStore, RecordSink } from '../../src/sync/ports.js';
import { eventually } from './async.js';
import { sampleCall } from './calls.js';
import { stackEndpoints, uniqueName } from './stack.js';

export { counterValue } from './counters.js';
export { eventually };
export { sampleCall } from './calls.js';

/**
 * A kafkajs client on the integration stack that logs nothing (tests assert, they do not read logs). With the
 * product's kafkajs idle-timer fix applied, as createKafka does: without it an idle client makes Node print
 * TimeoutNegativeWarning into the test output.
 */
export function testKafka(clientId = 'calls-connector-test'): Kafka {
  applyKafkajsIdleTimerFix();
  return new Kafka({ brokers: stackEndpoints().brokers, clientId, logLevel: logLevel.NOTHING });
}

/**
 * Creates topics, one partition unless told otherwise, and waits until the broker's metadata shows each with its
 * leaders, as the product does (whenTopicsLed): kafkajs's waitForLeaders gives up on the UNKNOWN_TOPIC_OR_PARTITION
 * a loaded KRaft broker answers for a moment after the creation, which failed tests at their first line.
 */
export async function createTopics(kafka: Kafka, topics: ITopicConfig[]): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.createTopics({
      topics: topics.map((t) => ({ numPartitions: 1, replicationFactor: 1, ...t })),
      waitForLeaders: false,
    });
    await whenTopicsLed(
      admin,
      topics.map((t) => t.topic),
    );
  } finally {
    await admin.disconnect();
  }
}

/** Every committed record of a topic, as a read_committed consumer sees it now. */
export async function readCommitted(kafka: Kafka, topic: string): Promise<TopicRecord[]> {
  const records: TopicRecord[] = [];
  await readTopicToEnd(kafka, { topic, groupIdPrefix: 'test-reader', timeoutMs: 30_000 }, (r) =>
    records.push(r),
  );
  return records;
}

/** A `kafka` config section on the integration stack with fresh topic names. */
export function testKafkaConfig(overrides: Partial<KafkaConfig> = {}): KafkaConfig {
  return kafkaSchema.parse({
    brokers: stackEndpoints().brokers,
    topic: uniqueName('calls'),
    offsetsTopic: uniqueName('offsets'),
    dlqTopic: uniqueName('dlq'),
    topicPartitions: 3,
    // Sessions and sinks tested on their own use one offsets partition (their tests reason about its one
    // last stable offset); runtime tests (connectorDocument) get the product's default of 24.
    offsetsTopicPartitions: 1,
    ...overrides,
  });
}

export interface TestSessionOptions {
  connectorName?: string;
  kafka?: KafkaConfig;
  onFatal?: (error: FatalError) => void;
  boundaryCap?: number;
}

/**
 * The connector scope opened at once and its offsets read, as the sink, offset-store and client tests drive Kafka
 * (the runtime opens scopes through the partition handover instead). Like the runtime, the sink starts before the
 * offsets are read: its producer's initialisation settles a transaction a previous writer left open.
 */
export interface KafkaSession {
  readonly kafka: Kafka;
  readonly offsetStore: OffsetStore;
  readonly sink: SessionSink;
  /** Offsets as loaded at start, by location uid. */
  readonly initialOffsets: Map<string, LocationOffset>;
  /** Closes the sink (committing what is queued, within `timeoutMs` when given), then the scope. */
  close(timeoutMs?: number): Promise<void>;
}

/** A session's options, the sinks' settings mapped from `config.kafka` as the runtime does unless given. */
export type TestKafkaSessionOptions = Omit<KafkaSessionOptions, 'sinks'> &
  Partial<Pick<KafkaSessionOptions, 'sinks'>>;

/** Completes `options` with the sinks' settings the runtime maps from `config.kafka` (runtime/steps/kafka.ts). */
export function sessionOptions(options: TestKafkaSessionOptions): KafkaSessionOptions {
  return { ...options, sinks: options.sinks ?? sinkSettings(options.config.kafka) };
}

export async function startKafkaSession(options: TestKafkaSessionOptions): Promise<KafkaSession> {
  const scoped = await ScopedKafkaSession.start(sessionOptions(options));
  const sink = await scoped.openConnectorSink();
  try {
    const initialOffsets = await scoped.loadOffsets('connector');
    return {
      kafka: scoped.kafka,
      offsetStore: scoped.offsetStore,
      sink,
      initialOffsets,
      close: async (timeoutMs) => {
        await sink.close(timeoutMs);
        await scoped.close(timeoutMs);
      },
    };
  } catch (error) {
    await sink.close();
    await scoped.close();
    throw error;
  }
}

/** A started KafkaSession on fresh topics, with its own metrics; the caller closes it. */
export async function startTestSession(options: TestSessionOptions = {}): Promise<{
  session: KafkaSession;
  metrics: ConnectorMetrics;
  config: { connector: { name: string }; kafka: KafkaConfig; schemaRegistry: SchemaRegistryConfig };
}> {
  const config = {
    connector: { name: options.connectorName ?? uniqueName('connector') },
    kafka: options.kafka ?? testKafkaConfig(),
    schemaRegistry: schemaRegistrySchema.parse({ url: stackEndpoints().registryUrl }),
  };
  const metrics = testMetrics();
  const session = await startKafkaSession({
    config,
    logger: silentLogger(),
    metrics,
    kafka: testKafka(config.connector.name),
    ...(options.onFatal === undefined ? {} : { onFatal: options.onFatal }),
    ...(options.boundaryCap === undefined ? {} : { boundaryCap: options.boundaryCap }),
  });
  return { session, metrics, config };
}

/**
 * The sessions of a test file (or of the describe block that calls it), each closed after the test that started it:
 * `started` is startTestSession, its session closed by an `afterEach` this registers.
 */
export function useKafkaSessions(): { started: typeof startTestSession } {
  const sessions: KafkaSession[] = [];
  afterEach(async () => {
    await Promise.all(sessions.splice(0).map((s) => s.close()));
  });
  return {
    started: async (options) => {
      const result = await startTestSession(options);
      sessions.push(result.session);
      return result;
    },
  };
}

/**
 * Reads the topic until at least `count` committed records are visible. A commit returns once the
 * coordinator logged it; the markers that make its records readable to read_committed consumers follow
 * shortly after, so a read right after a commit may not see them yet. Aborted records never appear,
 * so waiting for the expected count and then asserting the exact content is sound.
 */
export async function readCommittedAtLeast(
  kafka: Kafka,
  topic: string,
  count: number,
): Promise<TopicRecord[]> {
  let records: TopicRecord[] = [];
  await eventually(
    async () => {
      records = await readCommitted(kafka, topic);
      return records.length >= count;
    },
    30_000,
    `${count} committed records in ${topic}`,
  );
  return records;
}

/** Loads offsets until `ready` holds for them (see readCommittedAtLeast for why a first read may lag). */
export async function loadOffsetsWhen(
  store: OffsetStore,
  ready: (offsets: Map<string, LocationOffset>) => boolean,
): Promise<Map<string, LocationOffset>> {
  let offsets = new Map<string, LocationOffset>();
  await eventually(
    async () => {
      offsets = await store.loadAll();
      return ready(offsets);
    },
    30_000,
    'the expected offsets',
  );
  return offsets;
}

/** Commits one page of two sample calls of `locationUid` (no dead letters, a first offset); returns the calls. */
export async function commitTwoCalls(sink: RecordSink, locationUid: string): Promise<Call[]> {
  const calls = [sampleCall({ locationUid }), sampleCall({ locationUid })];
  await sink.commitPage({
    locationUid,
    calls,
    deadLetters: [],
    offset: { since: null, cursor: 'c1', watermark: calls[0]?.updatedAt ?? null, boundary: [] },
  });
  return calls;
}
