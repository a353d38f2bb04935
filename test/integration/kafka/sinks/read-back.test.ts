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
 * Kafka itself sometimes leaves a record of a committed transaction without its marker there.
 */
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, expect, it } from 'vitest';
import { schemaRegistrySchema } from '../../../../src/config/schema.js';
import type { FatalError } from '../../../../src/errors/index.js';
import { prepareKafka, type SessionSink } from '../../../../src/kafka/session.js';
import { transactionalIdFor } from '../../../../src/kafka/sinks/transactional-sink.js';
import { silentLogger } from '../../../../src/logging/logger.js';
import { ConnectorMetrics } from '../../../../src/metrics/metrics.js';
import { EMPTY_OFFSET, type LocationOffset } from '../../../../src/sync/model.js';
import type { PageCommit } from '../../../../src/sync/ports.js';
import { eventually } from '../../../support/async.js';
import { hookCommits } from '../../../support/commit-hook.js';
import { sampleCall } from '../../../support/calls.js';
import { readCommittedAtLeast, testKafkaConfig } from '../../../support/kafka.js';
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
  const config = {
    connector: { name },
    kafka: testKafkaConfig({ offsetsTopicPartitions: 1 }),
    schemaRegistry: schemaRegistrySchema.parse({ url: stackEndpoints().registryUrl }),
  };
  const ground = await prepareKafka({
    config,
    logger: silentLogger(),
    metrics: new ConnectorMetrics(),
    kafka,
  });
  let readBacksBegun = 0;
  const loadLocations = ground.offsetStore.loadLocations.bind(ground.offsetStore);
  ground.offsetStore.loadLocations = (uids) => {
    readBacksBegun += 1;
    return loadLocations(uids);
  };
  const fatal: FatalError[] = [];
  const sink: SessionSink = ground.buildSink(
    transactionalIdFor(name),
    (error) => fatal.push(error),
    undefined,
    { alone: () => Promise.resolve(true) }, // the only instance: its producer may be initialised again
  );
  await sink.start();
  closing.push(() => sink.close());

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
