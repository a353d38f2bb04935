/**
 * Issue 20, "a stale read after a broker restart mid-commit", made deterministic: a commit that went through but
 * whose EndTxn answer was lost (what a broker restart or a coordinator move does), read back while another
 * writer's transaction is open on the offsets partition (a neighbour connector sharing the topic; after a broker
 * restart, markers still pending do the same). A read_committed read stops at the last stable offset, before our
 * committed offset record: it shows the location's previous offset, which the rule takes for proof of an abort,
 * and the page is committed again (published twice). The sink's read-back must wait for the transaction open
 * ahead of it (kafka/topics/stable-offsets.ts) and find the page stored.
 *
 * The broker-kill form of the same fault (test/repro/kafka/sinks/broker-restart.test.ts) stays a reproduction:
 * Kafka itself sometimes leaves a record of a committed transaction without its marker there. What the operator's
 * abort of such a record leaves (the page's calls visible, the offsets topic at the location's previous offset) is
 * the second test's: the sink must find the calls visible and write the page's offset again, not publish it twice.
 */
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, expect, it } from 'vitest';
import { schemaRegistrySchema } from '../../../../src/config/schema.js';
import type { FatalError } from '../../../../src/errors/index.js';
import { prepareKafka, type SessionSink } from '../../../../src/kafka/session.js';
import { writeLocationOffset } from '../../../../src/kafka/offsets/offset-writer.js';
import { silentLogger } from '../../../../src/logging/logger.js';
import { testMetrics } from '../../../support/metrics.js';
import { EMPTY_OFFSET, type LocationOffset } from '../../../../src/sync/model.js';
import type { PageCommit } from '../../../../src/sync/ports.js';
import { eventually } from '../../../support/async.js';
import { hookCommits } from '../../../support/commit-hook.js';
import { sampleCall } from '../../../support/calls.js';
import { readCommittedAtLeast, sessionOptions, testKafkaConfig } from '../../../support/kafka.js';
import { stackEndpoints, uniqueName } from '../../../support/stack.js';

const LOCATION = '00000000-0000-4000-8000-000000000001';

function offsetOf(page: number): LocationOffset {
  return {
    since: null,
    cursor: `page-${page}`,
    watermark: `2024-05-01T10:00:0${page}.000000Z`,
    boundary: [`p${page}-c0`, `p${page}-c1`],
  };
}

function pageCommit(page: number, committed: LocationOffset): PageCommit {
  const offset = offsetOf(page);
  return {
    locationUid: LOCATION,
    calls: offset.boundary.map((uid) =>
      sampleCall({ uid, locationUid: LOCATION, updatedAt: offset.watermark ?? '' }),
    ),
    deadLetters: [],
    offset,
    committed,
  };
}

const closing: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const close of closing.reverse()) await close().catch(() => undefined);
});

function configFor(name: string) {
  return {
    connector: { name },
    kafka: testKafkaConfig({ offsetsTopicPartitions: 1 }),
    schemaRegistry: schemaRegistrySchema.parse({ url: stackEndpoints().registryUrl }),
  };
}

/** The runtime's exactly-once sink, started, as the only instance (its producer may be initialised again). */
async function startSink(
  kafka: Kafka,
  config: ReturnType<typeof configFor>,
  metrics = testMetrics(),
): Promise<{ ground: Awaited<ReturnType<typeof prepareKafka>>; sink: SessionSink; fatal: FatalError[] }> {
  const ground = await prepareKafka(sessionOptions({ config, logger: silentLogger(), metrics, kafka }));
  const fatal: FatalError[] = [];
  const sink = ground.buildSink({
    scope: 'connector',
    onFatal: (error) => fatal.push(error),
    instances: { newest: () => Promise.resolve(true) },
  });
  await sink.start();
  closing.push(() => sink.close());
  return { ground, sink, fatal };
}

it('finds a commit whose answer was lost stored, though another transaction held the offsets partition back when it read', async () => {
  const name = uniqueName('connector');
  const kafka = new Kafka({ brokers: stackEndpoints().brokers, clientId: name, logLevel: logLevel.NOTHING });
  // The sink's commits go through kafkajs as they are; an armed one then throws as a lost EndTxn answer would.
  let loseAnswer = false;
  const producer = hookCommits(kafka, async (transaction) => {
    await transaction.commit();
    if (!loseAnswer) return;
    loseAnswer = false;
    throw new Error('Connection error: the answer to EndTxn was lost');
  });
  const config = configFor(name);
  const { ground, sink, fatal } = await startSink(kafka, config);
  let readBacksBegun = 0;
  const loadLocations = ground.offsetStore.loadLocations.bind(ground.offsetStore);
  ground.offsetStore.loadLocations = (uids) => {
    readBacksBegun += 1;
    return loadLocations(uids);
  };

  expect(await sink.commitPage(pageCommit(1, { ...EMPTY_OFFSET, boundary: [] }))).toMatchObject({
    kind: 'stored',
  });

  // A neighbour's transaction, open on the offsets partition from now on.
  const neighbour = producer({
    transactionalId: uniqueName('neighbour'),
    idempotent: true,
    maxInFlightRequests: 1,
  });
  await neighbour.connect();
  closing.push(() => neighbour.disconnect());
  const open = await neighbour.transaction();
  await open.send({ topic: config.kafka.offsetsTopic, messages: [{ key: 'neighbour/0', value: '{}' }] });

  loseAnswer = true;
  const outcome = sink.commitPage(pageCommit(2, offsetOf(1)));
  // The read-back has begun (after the producer was initialised again); the neighbour ends its transaction only
  // now, so a read that did not wait for it has already answered with page 1's offset.
  await eventually(() => readBacksBegun > 0, 30_000, 'the sink reading back its failed commit');
  await open.abort();

  expect(await outcome).toMatchObject({ kind: 'stored' });
  expect(fatal).toEqual([]);
  // Page 2 once: committed by the first try, never again.
  const calls = await readCommittedAtLeast(kafka, config.kafka.topic, 4);
  expect(calls.map((r) => r.key?.toString()).sort()).toEqual(['p1-c0', 'p1-c1', 'p2-c0', 'p2-c1']);
});

it('writes the offset of a commit whose answer was lost again when its calls are visible but the offsets topic lost its offset record', async () => {
  const name = uniqueName('connector');
  const kafka = new Kafka({ brokers: stackEndpoints().brokers, clientId: name, logLevel: logLevel.NOTHING });
  const config = configFor(name);
  // An armed commit goes through, then the offsets topic is put back to page 1's offset (what an operator's
  // `kafka-transactions.sh abort` of a hanging offset record leaves), then the EndTxn answer is lost.
  let loseOffsetRecord = false;
  hookCommits(kafka, async (transaction) => {
    await transaction.commit();
    if (!loseOffsetRecord) return;
    loseOffsetRecord = false;
    await writeLocationOffset(
      kafka,
      { topic: config.kafka.offsetsTopic, connectorName: name, locationUid: LOCATION },
      offsetOf(1),
    );
    throw new Error('Connection error: the answer to EndTxn was lost');
  });
  const metrics = testMetrics();
  const { ground, sink, fatal } = await startSink(kafka, config, metrics);
  expect(await sink.commitPage(pageCommit(1, { ...EMPTY_OFFSET, boundary: [] }))).toMatchObject({
    kind: 'stored',
  });

  loseOffsetRecord = true;
  // Before: the read-back showed page 1's offset, the page was rejected and its calls published twice.
  expect(await sink.commitPage(pageCommit(2, offsetOf(1)))).toMatchObject({ kind: 'stored' });
  expect(fatal).toEqual([]);
  expect((await metrics.pageRewrites.get()).values[0]?.value).toBe(1);
  const calls = await readCommittedAtLeast(kafka, config.kafka.topic, 4);
  expect(calls.map((r) => r.key?.toString()).sort()).toEqual(['p1-c0', 'p1-c1', 'p2-c0', 'p2-c1']);
  // The offsets topic holds page 2's offset again: a restart continues after page 2.
  expect((await ground.offsetStore.loadLocations([LOCATION])).get(LOCATION)).toEqual(offsetOf(2));
});
