/**
 * Creates the connector's topics when missing and checks the ones whose configuration matters.
 *
 * - calls topic: `kafka.topicPartitions` partitions (keyed by uid), created with
 *   `cleanup.policy=kafka.topicCleanupPolicy` (compact by default: the topic keeps the latest version of
 *   every call, so it is the complete current state and a customer number of a call that later turned
 *   private is compacted away). An existing calls topic is taken as it is;
 * - offsets topic: `kafka.offsetsTopicPartitions` partitions, `cleanup.policy=compact` (the latest offset per key is all we need,
 *   and it must never be deleted by retention). An existing offsets topic that is not compacted is a
 *   FatalError: with `delete` in its policy, offsets would silently vanish after retention.ms;
 * - dead-letter topic: 1 partition, default retention;
 * - token topic (for the Kafka token store of the OAuth module): compacted, see ensureCompactedTopic;
 * - signals topic (`<kafka.offsetsTopic>-signals`, kafka/signals/signal-topic.ts): compacted, with the offsets
 *   topic's partition count, see signalsTopicSpec.
 *
 * With `kafka.createTopics: false` missing topics are a FatalError naming them (create them, or grant
 * CreateTopics). Contract: called at start-up, before producing.
 */
import kafkajs, { type Admin, type Kafka } from 'kafkajs';

// kafkajs is CommonJS and Node's ESM loader cannot see this export by name (only vitest's transform can).
const { ConfigResourceTypes } = kafkajs;
import { whenTopicsLed, whileLeadersSettle } from './leaders-settle.js';
import { FatalError, RetriableError } from '../../errors/index.js';
import type { KafkaConfig } from '../../config/schema.js';
import { describeKafkaError, fatalKafkaErrorType } from '../client/kafka-errors.js';

export interface TopicSpec {
  topic: string;
  partitions: number;
  replicationFactor: number;
  /** Topic configs set at creation, e.g. cleanup.policy. */
  configs?: Record<string, string>;
  /** When set, an existing topic must have this cleanup.policy (exactly), or start-up fails. */
  requirePolicy?: 'compact';
  /** The config key naming this topic, for error messages. */
  configKey: string;
}

const COMPACT = { 'cleanup.policy': 'compact' };

export function connectorTopicSpecs(config: KafkaConfig): TopicSpec[] {
  return [
    {
      topic: config.topic,
      partitions: config.topicPartitions,
      replicationFactor: config.replicationFactor,
      configs: { 'cleanup.policy': config.topicCleanupPolicy },
      configKey: 'kafka.topic',
    },
    {
      topic: config.offsetsTopic,
      // The upper bound on distributed mode's parallelism (one owner per partition); an existing topic keeps
      // its count, which must never change (a location's partition would move).
      partitions: config.offsetsTopicPartitions,
      replicationFactor: config.replicationFactor,
      configs: COMPACT,
      requirePolicy: 'compact',
      configKey: 'kafka.offsetsTopic',
    },
    {
      topic: config.dlqTopic,
      partitions: 1,
      replicationFactor: config.replicationFactor,
      configKey: 'kafka.dlqTopic',
    },
  ];
}

/** The signals topic of an offsets topic: `<offsetsTopic>-signals`. */
export function signalsTopicName(offsetsTopic: string): string {
  return `${offsetsTopic}-signals`;
}

/**
 * The signals topic: compacted (a signal and its outcome are each kept, their latest record: the paused
 * locations are read back from it after a restart, so retention must never delete them), and partitioned like
 * the offsets topic, so a location's signals sit in the partition its owner holds.
 */
export function signalsTopicSpec(config: KafkaConfig): TopicSpec {
  return {
    topic: signalsTopicName(config.offsetsTopic),
    partitions: config.offsetsTopicPartitions,
    replicationFactor: config.replicationFactor,
    configs: COMPACT,
    requirePolicy: 'compact',
    configKey: 'kafka.offsetsTopic (its -signals topic)',
  };
}

/** The spec of a compacted single-partition topic, such as the OAuth token store's. */
export function compactedTopicSpec(topic: string, replicationFactor: number, configKey: string): TopicSpec {
  return { topic, partitions: 1, replicationFactor, configs: COMPACT, requirePolicy: 'compact', configKey };
}

export async function ensureConnectorTopics(kafka: Kafka, config: KafkaConfig): Promise<void> {
  await ensureTopics(kafka, connectorTopicSpecs(config), config.createTopics);
}

/** Creates (when `create`) and checks one compacted topic; for the OAuth token topic. */
export async function ensureCompactedTopic(
  kafka: Kafka,
  topic: string,
  options: { replicationFactor: number; create: boolean; configKey: string },
): Promise<void> {
  await ensureTopics(
    kafka,
    [compactedTopicSpec(topic, options.replicationFactor, options.configKey)],
    options.create,
  );
}

export async function ensureTopics(
  kafka: Kafka,
  specs: readonly TopicSpec[],
  create: boolean,
): Promise<void> {
  const admin = kafka.admin();
  try {
    await admin.connect();
    const existing = new Set(await admin.listTopics());
    const missing = specs.filter((s) => !existing.has(s.topic));
    if (missing.length > 0 && !create) {
      throw new FatalError(
        'KAFKA_TOPIC_MISSING',
        `missing topic(s): ${missing.map((s) => `${s.topic} (${s.configKey})`).join(', ')}. Create them, or set kafka.createTopics: true`,
      );
    }
    if (missing.length > 0) {
      // Not kafkajs's waitForLeaders: it gives up on the UNKNOWN_TOPIC_OR_PARTITION a KRaft broker answers for a
      // moment after the creation (whenTopicsLed waits that out too).
      await admin.createTopics({
        waitForLeaders: false,
        topics: missing.map((s) => ({
          topic: s.topic,
          numPartitions: s.partitions,
          replicationFactor: s.replicationFactor,
          configEntries: Object.entries(s.configs ?? {}).map(([name, value]) => ({ name, value })),
        })),
      });
      await whenTopicsLed(
        admin,
        missing.map((s) => s.topic),
      );
    }
    for (const spec of specs)
      if (spec.requirePolicy !== undefined) await whileLeadersSettle(() => assertCleanupPolicy(admin, spec));
  } catch (error) {
    throw asTopicError(error);
  } finally {
    await admin.disconnect();
  }
}

async function assertCleanupPolicy(admin: Admin, spec: TopicSpec): Promise<void> {
  const described = await admin.describeConfigs({
    includeSynonyms: false,
    resources: [{ type: ConfigResourceTypes.TOPIC, name: spec.topic, configNames: ['cleanup.policy'] }],
  });
  const policy = described.resources[0]?.configEntries.find(
    (e) => e.configName === 'cleanup.policy',
  )?.configValue;
  if (policy !== spec.requirePolicy) {
    throw new FatalError(
      'KAFKA_TOPIC_NOT_COMPACTED',
      `topic ${spec.topic} (${spec.configKey}) has cleanup.policy=${policy ?? '(unknown)'}, but it must be exactly "${spec.requirePolicy}": ` +
        `with retention deleting records, stored state would be lost. Fix it with ` +
        `\`kafka-configs --alter --entity-type topics --entity-name ${spec.topic} --add-config cleanup.policy=compact\`, or point ${spec.configKey} at a compacted topic.`,
    );
  }
}

/**
 * The largest record batch the broker accepts on `topic`: its `max.message.bytes` (the broker's
 * `message.max.bytes` unless the topic overrides it). Undefined when the broker does not say.
 */
export async function topicMaxMessageBytes(
  admin: Pick<Admin, 'describeConfigs'>,
  topic: string,
): Promise<number | undefined> {
  try {
    const described = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['max.message.bytes'] }],
    });
    const value = described.resources[0]?.configEntries.find(
      (e) => e.configName === 'max.message.bytes',
    )?.configValue;
    const bytes = Number(value);
    return value === undefined || !Number.isSafeInteger(bytes) || bytes <= 0 ? undefined : bytes;
  } catch (error) {
    throw asTopicError(error);
  }
}

/** The topic's partition count (0 when it has none: it does not exist). */
export async function topicPartitionCount(kafka: Kafka, topic: string): Promise<number> {
  const admin = kafka.admin();
  try {
    await admin.connect();
    const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
    return topics[0]?.partitions.length ?? 0;
  } catch (error) {
    throw asTopicError(error);
  } finally {
    await admin.disconnect();
  }
}

/** Whether the topic exists (for one-shot commands that must not create it). */
export async function topicExists(kafka: Kafka, topic: string): Promise<boolean> {
  const admin = kafka.admin();
  try {
    await admin.connect();
    return (await admin.listTopics()).includes(topic);
  } catch (error) {
    throw asTopicError(error);
  } finally {
    await admin.disconnect();
  }
}

function asTopicError(error: unknown): Error {
  if (error instanceof FatalError || error instanceof RetriableError) return error;
  const fatalType = fatalKafkaErrorType(error);
  if (fatalType !== undefined) {
    return new FatalError(
      'KAFKA_NOT_PERMITTED',
      `Kafka refused a topic operation (${fatalType}): grant Describe/Create/DescribeConfigs on the topics`,
      {
        cause: error,
      },
    );
  }
  return new RetriableError(
    'KAFKA_UNAVAILABLE',
    `cannot check or create the topics: ${describeKafkaError(error)}`,
    { cause: error },
  );
}
