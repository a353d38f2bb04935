/**
 * connector.mode distributed on the real stack, in-process: two instances of one connector name split the
 * locations through their consumer group (each location owned by exactly one), and a partition's ownership is
 * enforced by its transactional id: once another instance initialised it, the former owner's commit fails and
 * nothing it wrote afterwards is visible to read_committed readers.
 */
import type { Kafka } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load.js';
import type { ConnectorConfig } from '../../../src/config/schema.js';
import { ConnectorError } from '../../../src/errors/index.js';
import { ConnectorRuntime } from '../../../src/runtime/connector.js';
import { ScopedKafkaSession as DistributedKafkaSession } from '../../../src/kafka/session.js';
import { locationPartition } from '../../../src/kafka/group/location-partition.js';
import { KafkaOffsetStore } from '../../../src/kafka/offsets/kafka-offset-store.js';
import { encodeOffsetValue, offsetKey } from '../../../src/kafka/offsets/offset-codec.js';
import { silentLogger } from '../../../src/logging/logger.js';
import { testMetrics } from '../../support/metrics.js';
import type { PageCommit } from '../../../src/sync/ports.js';
import type { RunningSandbox } from '../../../packages/sandbox/src/index.js';
import {
  connectorDocument,
  publishedCalls,
  runConnector,
  startTestSandbox,
  type RunningConnector,
} from '../../support/connector.js';
import { caughtUpCheck, doubledAndMissing } from '../../support/connector-process.js';
import { eventually, readCommittedAtLeast, sampleCall, testKafka } from '../../support/kafka.js';
import { schemaRegistrySchema } from '../../../src/config/schema.js';
import { stackEndpoints, uniqueName } from '../../support/stack.js';
import { sessionOptions, testKafkaConfig } from '../../support/kafka.js';
import { rejectionOf } from '../../support/rejection.js';

const GROUP = { groupSessionTimeoutMs: 6_000, groupHeartbeatIntervalMs: 1_000 };
const logger = silentLogger;

describe('two instances in distributed mode', () => {
  let sandbox: RunningSandbox;
  let kafka: Kafka;
  let config: ConnectorConfig;
  const running: RunningConnector[] = [];

  beforeAll(async () => {
    sandbox = await startTestSandbox({
      // 24 locations over 6 partitions split 3 + 3, by the hash of a random connector name: one half is left
      // without a location once in about 8 million runs (with 8 locations it was once in about 128).
      data: { seed: 41, locations: 24, callsPerLocation: 20, privateRatio: 0.3 },
    });
    kafka = testKafka();
    config = parseConfig(
      {
        ...connectorDocument(sandbox, {
          api: { pageSize: 10, requestsPerSecond: 100 },
          kafka: { offsetsTopicPartitions: 6, ...GROUP },
          poll: { intervalMs: 500, maxLocationsInFlight: 4 },
        }),
        connector: { name: uniqueName('it-distributed'), mode: 'distributed' },
      },
      {},
    );
  });

  afterAll(async () => {
    await Promise.all(running.map((c) => c.stop().catch(() => undefined)));
    await sandbox.close();
  });

  it('split the locations, each owned by exactly one, and publish every call version once', async () => {
    const first = await runConnector({ config, logger: logger() });
    running.push(first);
    await eventually(
      () => first.runtime.assignment()?.partitions.length === 6,
      60_000,
      'the first instance owns all',
    );
    const second = await runConnector({ config, logger: logger() });
    running.push(second);
    const owned = (c: RunningConnector) => c.runtime.status().map((s) => s.locationUid);
    await eventually(
      () => {
        const a = first.runtime.assignment()?.partitions ?? [];
        const b = second.runtime.assignment()?.partitions ?? [];
        return (
          a.length === 3 &&
          b.length === 3 &&
          owned(first).length + owned(second).length === sandbox.locations.length
        );
      },
      60_000,
      'the partitions split 3 + 3 and every location scheduled',
    );
    const [a, b] = [owned(first), owned(second)];
    expect([...a, ...b].sort()).toEqual([...sandbox.locations].sort());
    expect(a.filter((uid) => b.includes(uid))).toEqual([]);
    expect(a.length).toBeGreaterThan(0);
    expect(b.length).toBeGreaterThan(0);
    // Each owns exactly the locations whose offset keys hash to its partitions.
    const partitionsOfFirst = new Set(first.runtime.assignment()?.partitions);
    for (const uid of sandbox.locations)
      expect(a.includes(uid)).toBe(partitionsOfFirst.has(locationPartition(config.connector.name, uid, 6)));
    expect(await first.runtime.metrics.ownedLocations.get()).toMatchObject({ values: [{ value: a.length }] });
    // As each sees the group (described by the coordinator), every location has an owner.
    const unowned = async (c: RunningConnector) =>
      (await c.runtime.metrics.unownedLocations.get()).values[0]?.value;
    await eventually(
      async () => (await unowned(first)) === 0 && (await unowned(second)) === 0,
      30_000,
      'no location without an owner',
    );
    expect((await second.runtime.metrics.rebalances.get()).values[0]?.value).toBeGreaterThanOrEqual(1);

    const store = new KafkaOffsetStore({
      kafka,
      topic: config.kafka.offsetsTopic,
      connectorName: config.connector.name,
      groupIdPrefix: 'distributed-test-offsets',
      loadTimeoutMs: 30_000,
    });
    await eventually(caughtUpCheck(sandbox, store), 120_000, 'every location caught up');
    const truth = sandbox.locations.flatMap((location) => sandbox.admin.truth(location));
    const published = await publishedCalls(kafka, config, truth);
    expect(doubledAndMissing(published, truth)).toEqual({ doubled: [], missing: [] });
  });
});

describe('two instances in distributed mode, at least once', () => {
  it('split the locations and publish every call version, sharing one idempotent producer each', async () => {
    const sandbox = await startTestSandbox({ data: { seed: 8, locations: 4, callsPerLocation: 30 } });
    const config = parseConfig(
      {
        ...connectorDocument(sandbox, {
          api: { pageSize: 10 },
          kafka: { offsetsTopicPartitions: 4, exactlyOnce: false, ...GROUP },
        }),
        connector: { name: uniqueName('it-distributed-alo'), mode: 'distributed' },
      },
      {},
    );
    const instances = [
      await runConnector({ config, logger: logger() }),
      await runConnector({ config, logger: logger() }),
    ];
    try {
      const owned = () => instances.flatMap((c) => c.runtime.status().map((s) => s.locationUid));
      await eventually(
        () =>
          instances.every((c) => (c.runtime.assignment()?.partitions.length ?? 0) === 2) &&
          owned().length === sandbox.locations.length,
        60_000,
        'the partitions split 2 + 2',
      );
      expect([...owned()].sort()).toEqual([...sandbox.locations].sort());
      const store = new KafkaOffsetStore({
        kafka: testKafka(),
        topic: config.kafka.offsetsTopic,
        connectorName: config.connector.name,
        groupIdPrefix: 'distributed-alo-test-offsets',
        loadTimeoutMs: 30_000,
      });
      await eventually(caughtUpCheck(sandbox, store), 120_000, 'every location caught up');
      const truth = sandbox.locations.flatMap((location) => sandbox.admin.truth(location));
      expect(doubledAndMissing(await publishedCalls(testKafka(), config, truth), truth).missing).toEqual([]);
    } finally {
      await Promise.all(instances.map((c) => c.stop()));
      await sandbox.close();
    }
  });
});

describe('instances of one connector name in different modes', () => {
  it('stop the single-mode instance that joins distributed ones (the broker refuses the mix)', async () => {
    const sandbox = await startTestSandbox({ data: { seed: 5, locations: 2, callsPerLocation: 5 } });
    const name = uniqueName('it-mixed');
    const document = connectorDocument(sandbox, { kafka: { offsetsTopicPartitions: 2, ...GROUP } });
    const distributed = await runConnector({
      config: parseConfig({ ...document, connector: { name, mode: 'distributed' } }, {}),
      logger: logger(),
    });
    try {
      await eventually(
        () => distributed.runtime.assignment() !== null,
        60_000,
        'the distributed instance joined',
      );
      const single = await ConnectorRuntime.start({
        config: parseConfig({ ...document, connector: { name } }, {}),
        logger: logger(),
      });
      try {
        // Bounded: a refusal that never arrives ends the run (resolving it) instead of hanging the test.
        const run = single.run(AbortSignal.timeout(30_000));
        expect(await rejectionOf(run)).toMatchObject({ code: 'KAFKA_GROUP_MEMBERSHIP_LOST' });
      } finally {
        await single.close();
      }
      expect(distributed.runtime.fatalError).toBeNull();
    } finally {
      await distributed.stop();
      await sandbox.close();
    }
  });
});

describe('a partition taken over by another instance', () => {
  function page(locationUid: string, updatedAt: string): PageCommit {
    const calls = [sampleCall({ locationUid, updatedAt })];
    return {
      locationUid,
      calls,
      deadLetters: [],
      offset: {
        since: null,
        cursor: `after-${updatedAt}`,
        watermark: updatedAt,
        boundary: calls.map((c) => c.uid),
      },
    };
  }

  it('fences the former owner: its commit fails, it is told once, and nothing it wrote after the takeover is visible', async () => {
    const config = {
      connector: { name: uniqueName('it-takeover') },
      kafka: testKafkaConfig({ offsetsTopicPartitions: 4, ...GROUP }),
      schemaRegistry: schemaRegistrySchema.parse({ url: stackEndpoints().registryUrl }),
    };
    const options = sessionOptions({ config, logger: logger(), metrics: testMetrics() });
    const former = await DistributedKafkaSession.start(options);
    const next = await DistributedKafkaSession.start(options);
    const location = '00000000-0000-4000-8000-000000000001';
    const partition = locationPartition(config.connector.name, location, 4);
    let takenOver = 0;
    const formerSink = await former.openPartitionSink(partition, () => (takenOver += 1));
    await formerSink.commitPage(page(location, '2024-05-01T10:00:00.000001Z'));

    const nextSink = await next.openPartitionSink(partition, () => {
      throw new Error('the new owner is not fenced');
    });
    // The new owner reads the partition after its producer initialised: the former owner's last commit.
    expect((await next.loadPartitions([partition])).get(location)?.watermark).toBe(
      '2024-05-01T10:00:00.000001Z',
    );

    const error = await rejectionOf(formerSink.commitPage(page(location, '2024-05-01T11:00:00.000001Z')));
    expect(error).toBeInstanceOf(ConnectorError);
    expect((error as ConnectorError).code).toBe('KAFKA_PARTITION_TAKEN_OVER');
    expect((error as ConnectorError).disposition).toBe('retriable');
    // Nothing more is ever written by the former owner, and it was told once.
    const again = await rejectionOf(formerSink.commitPage(page(location, '2024-05-01T12:00:00.000001Z')));
    expect((again as ConnectorError).code).toBe('KAFKA_PARTITION_TAKEN_OVER');
    expect(takenOver).toBe(1);

    await nextSink.commitPage(page(location, '2024-05-01T13:00:00.000001Z'));
    // At least, then exactly: the commit returns before its markers make the records readable.
    const offsets = await readCommittedAtLeast(testKafka(), config.kafka.offsetsTopic, 2);
    const watermarks = offsets.map(
      (r) => (JSON.parse(r.value?.toString('utf8') ?? '{}') as { watermark?: string }).watermark,
    );
    expect(offsets.every((r) => r.partition === partition)).toBe(true);
    expect(watermarks).toEqual(['2024-05-01T10:00:00.000001Z', '2024-05-01T13:00:00.000001Z']);
    const calls = await readCommittedAtLeast(testKafka(), config.kafka.topic, 2);
    expect(calls).toHaveLength(2);

    await formerSink.close(5_000);
    await nextSink.close(5_000);
    await former.close();
    await next.close();
  });
});

describe('an offsets topic whose partition count changed', () => {
  it('is fatal when a partition taken over holds a location offset whose key now hashes elsewhere', async () => {
    const config = {
      connector: { name: uniqueName('it-repartitioned') },
      kafka: testKafkaConfig({ offsetsTopicPartitions: 2, ...GROUP }),
      schemaRegistry: schemaRegistrySchema.parse({ url: stackEndpoints().registryUrl }),
    };
    const fatal: ConnectorError[] = [];
    const session = await DistributedKafkaSession.start(
      sessionOptions({
        config,
        logger: logger(),
        metrics: testMetrics(),
        onFatal: (error) => fatal.push(error),
      }),
    );
    try {
      const location = '00000000-0000-4000-8000-000000000007';
      const wrong = 1 - locationPartition(config.connector.name, location, 2);
      // As if written when the topic had another partition count.
      const producer = testKafka().producer();
      await producer.connect();
      await producer.send({
        topic: config.kafka.offsetsTopic,
        messages: [
          {
            partition: wrong,
            key: offsetKey(config.connector.name, location),
            value: encodeOffsetValue({ since: null, cursor: 'c', watermark: null, boundary: [] }),
          },
        ],
      });
      await producer.disconnect();
      const error = await rejectionOf(session.loadPartitions([wrong]));
      expect((error as ConnectorError).code).toBe('KAFKA_OFFSETS_TOPIC_REPARTITIONED');
      expect(fatal.map((e) => e.code)).toEqual(['KAFKA_OFFSETS_TOPIC_REPARTITIONED']);
    } finally {
      await session.close();
    }
  });
});
