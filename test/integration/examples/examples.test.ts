/**
 * The consumer examples (examples/) against what the connector published: after a short connector run on
 * the sandbox (calls private and not, some refused enrichment, some updated after their first version), the
 * TypeScript and Python consumers print every committed call version exactly once with its fields as the
 * test's own read_committed reader decodes them (and none of an aborted transaction written after the
 * connector's), and the Kafka Streams job's counts per location and hour
 * equal those computed from the latest version of each call.
 *
 * The Python venv and the Streams job's jars are built by .ci/run (see the messages below to build them
 * by hand).
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/logging/logger.js';
import type { ConnectorConfig } from '../../../src/config/schema.js';
import type { RunningSandbox } from '../../../packages/sandbox/src/index.js';
import {
  connectorConfig,
  publishedCalls,
  runConnector,
  startTestSandbox,
  versionId,
  type PublishedCall,
} from '../../support/connector.js';
import { startExample, untilExample, type ExampleProcess } from '../../support/example-process.js';
import { createTopics, readCommitted, testKafka } from '../../support/kafka.js';
import { stackEndpoints, uniqueName } from '../../support/stack.js';

const ROOT = resolve(import.meta.dirname, '../../..');
const EXAMPLES = join(ROOT, 'examples');
const PYTHON = join(ROOT, '.cache/examples-python/bin/python');
const STREAMS = join(EXAMPLES, 'kafka-streams-calls-per-hour');
const STREAMS_JAR = join(STREAMS, 'target/calls-per-hour-0.1.0.jar');

/** The fields both consumers print, as the test's reader decodes them. */
function printedFields(call: PublishedCall): Record<string, unknown> {
  return {
    uid: call.uid,
    locationUid: call.locationUid,
    updatedAtIso: call.updatedAtIso,
    isPrivate: call.isPrivate,
    enriched: call.enriched,
    customerPhoneNumber: call.customerPhoneNumber,
  };
}

const byVersion = (a: Record<string, unknown>, b: Record<string, unknown>) =>
  `${String(a.uid)}@${String(a.updatedAtIso)}`.localeCompare(`${String(b.uid)}@${String(b.updatedAtIso)}`);

/** Calls per "locationUid hour" from the latest version of each call (startedAt, else updatedAt). */
function expectedCounts(published: readonly PublishedCall[]): Map<string, number> {
  const latest = new Map<string, PublishedCall>();
  for (const call of published) {
    const seen = latest.get(call.uid);
    if (seen === undefined || call.updatedAt > seen.updatedAt) latest.set(call.uid, call);
  }
  const counts = new Map<string, number>();
  for (const call of latest.values()) {
    const micros = (call.startedAt as number | null) ?? call.updatedAt;
    const hour = new Date(Math.floor(micros / 3_600_000_000) * 3_600_000).toISOString().replace('.000Z', 'Z');
    const key = `${call.locationUid} ${hour}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

/**
 * A call version in a transaction that aborts, after the connector's: a reader that is not read_committed
 * prints it (the test's own reader, read_committed, never sees it, nor must the examples).
 */
async function writeAbortedCall(model: PublishedCall | undefined, topic: string): Promise<void> {
  if (model === undefined) throw new Error('the connector published nothing');
  const registry = new SchemaRegistry({ host: stackEndpoints().registryUrl });
  const { key: _key, ...call } = model;
  const value = await registry.encode(await registry.getLatestSchemaId(`${topic}-value`), {
    ...call,
    uid: 'aborted-call',
  });
  const producer = testKafka().producer({
    transactionalId: uniqueName('aborted'),
    idempotent: true,
    maxInFlightRequests: 1,
  });
  await producer.connect();
  try {
    const transaction = await producer.transaction();
    await transaction.send({ topic, messages: [{ key: 'aborted-call', value }] });
    await transaction.abort();
  } finally {
    await producer.disconnect();
  }
}

describe('the consumer examples, run against a topic the connector wrote', () => {
  let sandbox: RunningSandbox;
  let config: ConnectorConfig;
  let published: PublishedCall[];
  let running: ExampleProcess | undefined;
  const { brokers, registryUrl } = stackEndpoints();
  const kafka = testKafka();
  const env = () => ({
    KAFKA_BROKERS: brokers.join(','),
    SCHEMA_REGISTRY_URL: registryUrl,
    CALLS_TOPIC: config.kafka.topic,
  });

  beforeAll(async () => {
    sandbox = await startTestSandbox({
      data: { seed: 44, locations: 2, callsPerLocation: 40, privateRatio: 0.4 },
      faults: {
        // Some calls refuse enrichment: published without startedAt, counted at their updatedAt's hour.
        singleCallFailures: [
          { rate: 0.1, attempts: 0, answer: { status: 403, body: '{}', contentType: 'application/json' } },
        ],
      },
    });
    config = connectorConfig(sandbox);
    const connector = await runConnector({ config, logger: silentLogger() });
    try {
      const truth = () => sandbox.locations.flatMap((l) => sandbox.admin.truth(l));
      await publishedCalls(kafka, config, truth(), 60_000);
      // Later versions of a few calls, one moved two hours earlier: a consumer sees both versions, the
      // Streams job counts the call once, in its latest version's hour.
      const [first, second, third] = truth();
      for (const call of [first, second, third]) {
        if (call === undefined) throw new Error('the sandbox generated too few calls');
        const startedAt = new Date(Date.parse(call.startedAt) - 2 * 3_600_000).toISOString();
        sandbox.admin.upsertCall({ uid: call.uid, startedAt });
      }
      published = await publishedCalls(kafka, config, truth(), 60_000);
    } finally {
      await connector.stop();
    }
    await writeAbortedCall(published[0], config.kafka.topic);
    const versions = published.map(versionId);
    expect(new Set(versions).size).toBe(versions.length);
    expect(versions).toEqual(
      expect.arrayContaining(sandbox.locations.flatMap((l) => sandbox.admin.truth(l)).map(versionId)),
    );
  });

  afterAll(async () => {
    await running?.stop();
    await sandbox?.close();
  });

  const consumesEveryVersionOnce = async (example: ExampleProcess) => {
    running = example;
    await untilExample(
      example,
      () => example.lines().length >= published.length,
      60_000,
      `${published.length} calls printed`,
    );
    await example.stop();
    expect(
      example
        .lines()
        .map(({ partition: _p, offset: _o, startedAt: _s, ...fields }) => fields)
        .sort(byVersion),
    ).toEqual(published.map(printedFields).sort(byVersion));
  };

  it('prints every committed call version once with the TypeScript consumer', async () => {
    await consumesEveryVersionOnce(
      // The flag: Node 22 before 22.18 strips types only when asked (later versions by default).
      startExample(
        process.execPath,
        [
          '--experimental-strip-types',
          '--disable-warning=ExperimentalWarning',
          join(EXAMPLES, 'typescript-consumer/consumer.ts'),
        ],
        {
          ...env(),
          GROUP_ID: uniqueName('example-ts'),
        },
      ),
    );
  });

  it('prints every committed call version once with the Python consumer (confluent-kafka)', async () => {
    if (!existsSync(PYTHON)) {
      throw new Error(
        `the Python example's venv is missing (${PYTHON}): .ci/run builds it, or run ` +
          '`python3 -m venv .cache/examples-python && .cache/examples-python/bin/pip install -r examples/python-consumer/requirements.txt`',
      );
    }
    await consumesEveryVersionOnce(
      startExample(
        PYTHON,
        [join(EXAMPLES, 'python-consumer/consumer.py')],
        {
          ...env(),
          GROUP_ID: uniqueName('example-py'),
          PYTHONWARNINGS: 'ignore::DeprecationWarning',
          // On a timeout, SIGABRT makes Python print every thread's stack (where it waited).
          PYTHONFAULTHANDLER: '1',
          // librdkafka's consumer-group steps, in the stderr a failure prints.
          KAFKA_CONFIG: 'debug=cgrp',
        },
        'SIGABRT',
      ),
    );
  });

  it('counts calls per location and hour with the Kafka Streams job, each call once in its latest hour', async () => {
    if (!existsSync(STREAMS_JAR)) {
      throw new Error(
        `the Kafka Streams example is not built (${STREAMS_JAR}): .ci/run builds it, or run ` +
          '`mvn -B -q -f examples/kafka-streams-calls-per-hour/pom.xml package`',
      );
    }
    const outputTopic = uniqueName('calls-per-hour');
    await createTopics(kafka, [{ topic: outputTopic, numPartitions: 3 }]);
    const stateDir = await mkdtemp(join(tmpdir(), 'calls-streams-'));
    const expected = expectedCounts(published);
    let counts = new Map<string, number>();
    const job = startExample(
      'java',
      ['-cp', `${STREAMS_JAR}:${join(STREAMS, 'target/lib/*')}`, 'com.callsconnector.examples.CallsPerHour'],
      {
        ...env(),
        APPLICATION_ID: uniqueName('calls-per-hour'),
        OUTPUT_TOPIC: outputTopic,
        STATE_DIR: stateDir,
      },
    );
    running = job;
    try {
      await untilExample(
        job,
        async () => {
          const latest = new Map<string, number>();
          for (const record of await readCommitted(kafka, outputTopic)) {
            if (record.key !== null && record.value !== null)
              latest.set(record.key.toString('utf8'), Number(record.value.readBigInt64BE()));
          }
          counts = new Map([...latest].filter(([, count]) => count !== 0));
          return counts.size === expected.size && [...expected].every(([key, n]) => counts.get(key) === n);
        },
        90_000,
        'the counts per location and hour of every published call',
      );
    } finally {
      await job.stop();
      await rm(stateDir, { recursive: true, force: true });
    }
    expect(Object.fromEntries(counts)).toEqual(Object.fromEntries(expected));
    expect([...expected.values()].reduce((a, b) => a + b, 0)).toBe(new Set(published.map((c) => c.uid)).size);
  });
});
