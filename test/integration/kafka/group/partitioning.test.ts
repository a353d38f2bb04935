/**
 * Keyed partitioning matches the Java client's, so Java and Kafka Streams consumers co-partition with
 * our topic. The reference is Kafka's own producer code (BuiltInPartitioner.partitionForKey: murmur2)
 * from the jars the local stack resolved, run by a single-file Java program; the subject is kafkajs'
 * DefaultPartitioner as our sinks configure it, and the partitions the broker actually stored.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Partitioners, type PartitionMetadata } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { frameConfluent } from '../../../../src/kafka/avro/call-codec.js';
import {
  readCommittedAtLeast,
  sampleCall,
  startTestSession,
  testKafka,
  testKafkaConfig,
} from '../../../support/kafka.js';

const repoRoot = resolve(import.meta.dirname, '..', '..', '..', '..');
// The jars of the Kafka version the stack runs (STACK_KAFKA_VERSION, else stack.mjs's default): the reference
// partitioner is the one of the broker line under test.
const kafkaVersion =
  process.env.STACK_KAFKA_VERSION ??
  /STACK_KAFKA_VERSION \?\? '([\d.]+)'/.exec(
    readFileSync(resolve(repoRoot, 'scripts', 'stack.mjs'), 'utf8'),
  )?.[1];
const classpathFile = resolve(repoRoot, '.cache', 'stack', `kafka-${kafkaVersion}`, 'classpath.txt');
const javaProgram = resolve(import.meta.dirname, '..', 'fixtures', 'JavaPartitions.java');
const PARTITION_COUNTS = [1, 2, 3, 6, 7, 12, 100];

/** Partitions chosen by the Java client for each key, one array (per partition count) per key. */
function javaPartitions(keys: readonly Buffer[], counts: readonly number[]): number[][] {
  if (!existsSync(classpathFile)) {
    throw new Error(
      `${classpathFile} is missing: run \`node scripts/stack.mjs fetch\` once so that Maven resolves the Kafka jars`,
    );
  }
  const run = spawnSync(
    'java',
    ['-cp', readFileSync(classpathFile, 'utf8').trim(), javaProgram, ...counts.map(String)],
    {
      input: keys.map((k) => k.toString('hex')).join('\n') + '\n',
      encoding: 'utf8',
      timeout: 60_000,
    },
  );
  if (run.status !== 0) throw new Error(`java failed (${run.status}): ${run.stderr}`);
  return run.stdout
    .trim()
    .split('\n')
    .map((line) => line.split(',').map(Number));
}

function kafkajsPartition(key: Buffer | string, numPartitions: number): number {
  const partitioner = Partitioners.DefaultPartitioner();
  const partitionMetadata: PartitionMetadata[] = Array.from({ length: numPartitions }, (_, partitionId) => ({
    partitionId,
    leader: 0,
    partitionErrorCode: 0,
    replicas: [0],
    isr: [0],
  }));
  return partitioner({ topic: 'calls', partitionMetadata, message: { key, value: null } });
}

const uids = [
  ...Array.from(
    { length: 200 },
    (_, i) =>
      `${i.toString(16).padStart(8, '0')}-5d1e-4c1a-9f3b-${(i * 7919).toString(16).padStart(12, '0')}`,
  ),
  'a',
  'call-ünïcödé-☎',
  '日本語のキー',
  'x'.repeat(1000),
  'short',
];

describe('keyed partitioning', () => {
  it('puts every string key and Avro-framed key in the partition the Java client chooses, for any partition count', () => {
    const stringKeys = uids.map((uid) => Buffer.from(uid, 'utf8'));
    // Avro keys are hashed over their serialized bytes, Confluent frame included, in Java as here.
    const avroKeys = uids.slice(0, 20).map((uid, i) => frameConfluent(i + 1, Buffer.from(uid, 'utf8')));
    const keys = [...stringKeys, ...avroKeys];

    const expected = javaPartitions(keys, PARTITION_COUNTS);
    const actual = keys.map((key, i) =>
      PARTITION_COUNTS.map((n) => kafkajsPartition(i < stringKeys.length ? (uids[i] ?? '') : key, n)),
    );

    expect(actual).toEqual(expected);
    // Not vacuous: keys spread over the partitions.
    expect(new Set(expected.map((row) => row[PARTITION_COUNTS.indexOf(12)])).size).toBe(12);
  });

  it('stores records published by the sink in the partition the Java client would choose for their uid', async () => {
    const { session, config } = await startTestSession({ kafka: testKafkaConfig({ topicPartitions: 6 }) });
    try {
      const locationUid = '00000000-0000-4000-8000-000000000001';
      const calls = Array.from({ length: 30 }, () => sampleCall({ locationUid }));
      await session.sink.commitPage({
        locationUid,
        calls,
        deadLetters: [],
        offset: { since: null, cursor: null, watermark: null, boundary: [] },
      });

      const stored = await readCommittedAtLeast(testKafka(), config.kafka.topic, calls.length);
      const keys = stored.map((r) => r.key ?? Buffer.alloc(0));
      const expected = javaPartitions(keys, [6]).map((row) => row[0]);
      expect(stored.map((r) => r.partition)).toEqual(expected);
    } finally {
      await session.close();
    }
  });
});
