/**
 * Kafka's own fault, with no connector code: kafkajs and a bare single-node KRaft broker (test/support/own-broker.ts),
 * as an issue for Apache Kafka would show it (docs/kafka-hanging-transaction.md).
 *
 * A transactional producer writes one record to each of two partitions and commits; the broker is killed (SIGKILL)
 * as soon as its transaction coordinator has logged the commit (PrepareCommit, seen as the __transaction_state
 * segment growing), and started again on the same data dir. The coordinator must then finish the commit: write the
 * COMMIT markers on both partitions, then CompleteCommit. Kafka 4.4.0 (not 3.9.2) sometimes writes CompleteCommit
 * without the markers: on restart it loads the PrepareCommit and sends the markers while the partitions have no
 * leader yet (the broker re-registers fenced), `KRaftMetadataCache.getPartitionLeaderEndpoint` answers "no such
 * partition" for a partition without a live leader (3.9's Scala cache answered `Node.noNode`, retried), and
 * `TransactionMarkerChannelManager` skips such partitions as deleted: "Couldn't find leader endpoint for partitions
 * ... these partitions are likely deleted already and hence can be skipped" (KAFKA-20734). The records stay without
 * a marker (a hanging transaction) until an operator ends it with `kafka-transactions.sh abort`.
 *
 * A REPRODUCTION of Kafka's bug, kept out of `npm test` and of the connector's `repro` project: it fails while the
 * broker has the bug. `CALLS_REPRO=1 npx vitest run --project kafka-bugs` (STACK_KAFKA_VERSION=3.9.2 for the 3.x
 * broker; the registry is not used). The test aborts what hangs, as an operator would, so that each attempt starts
 * clean, and says per attempt what the broker logged.
 *
 * The second case shows, on the same buggy broker, what the connector does about it with no ClusterAction: a
 * producer of the same transactional id ends its own hanging transaction (docs/kafka-hanging-transaction.md, "What a
 * client can do"). It passes on 4.4.0 (it fails only when no attempt met a hang).
 */
import { Kafka, logLevel, type Producer } from 'kafkajs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  killOnceTransactionLogged,
  openTransactions,
  SKIPPED_MARKERS,
  startOwnBroker,
  type OwnBroker,
} from '../../support/own-broker.js';

const ATTEMPTS = 4;
const TOPIC = 'hanging';
const TRANSACTIONAL_ID = 'markers-repro';

let broker: OwnBroker | undefined;
beforeAll(async () => {
  broker = await startOwnBroker({
    name: 'markers',
    // The coordinator's INFO lines say when it skips markers.
    logLevels: { 'kafka.coordinator.transaction': 'INFO' },
  });
});
afterAll(async () => {
  await broker?.stop();
});

function transactionalProducer(kafka: Kafka): Producer {
  return kafka.producer({ transactionalId: TRANSACTIONAL_ID, idempotent: true, maxInFlightRequests: 1 });
}

it('writes the markers of a transaction the coordinator logged as committed, through a broker killed right after', async () => {
  const own = broker!;
  const kafka = new Kafka({ brokers: [own.broker], clientId: 'markers-repro', logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: 2, replicationFactor: 1 }] });
  await admin.disconnect();

  const hanging: string[] = [];
  const attempts: string[] = [];
  for (let attempt = 1; attempt <= ATTEMPTS; attempt += 1) {
    const logBefore = own.log().length;
    const producer = transactionalProducer(kafka);
    await producer.connect();
    const transaction = await producer.transaction();
    await transaction.send({
      topic: TOPIC,
      messages: [0, 1].map((partition) => ({ partition, key: `a${attempt}`, value: `p${partition}` })),
    });
    const committing = transaction.commit();
    const killed = killOnceTransactionLogged(own);
    const commit = await committing.then(
      () => 'answered',
      () => 'failed',
    );
    await killed;
    await producer.disconnect().catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await own.restart();

    // A new producer of the id initialises: InitProducerId waits until the coordinator completed what it logged.
    const next = transactionalProducer(kafka);
    await next.connect();
    await (await next.transaction()).abort();
    await next.disconnect();

    const open: string[] = [];
    for (const partition of [0, 1]) {
      const described = await own.transactions(
        'describe-producers',
        '--topic',
        TOPIC,
        '--partition',
        String(partition),
      );
      for (const o of openTransactions(described)) {
        open.push(`${TOPIC}-${partition}@${o.startOffset} (producer ${o.producerId})`);
        // As an operator would: so that the next attempt starts clean.
        await own.transactions(
          'abort',
          '--topic',
          TOPIC,
          '--partition',
          String(partition),
          '--start-offset',
          o.startOffset,
        );
      }
    }
    const logged = own.log().slice(logBefore).split('\n');
    const skipped = logged.filter((line) => SKIPPED_MARKERS.test(line));
    // That the coordinator's log is there at all: "no skipped markers" means something only then.
    const elected = logged.filter((line) => line.includes('Elected as the txn coordinator')).length;
    attempts.push(
      `attempt ${attempt}: commit ${commit}; open after init: ${open.join(', ') || 'none'}; ` +
        `markers skipped: ${skipped.length}; coordinator elections logged: ${elected}`,
    );
    if (open.length > 0)
      hanging.push(
        `attempt ${attempt}: ${open.join(', ')}${skipped.length > 0 ? ` (${skipped[0]!.trim()})` : ''}`,
      );
  }
  console.info(`transaction markers through broker kills:\n${attempts.join('\n')}`);
  expect(hanging).toEqual([]);
}, 240_000);

/**
 * The connector's own remedy, shown against the bare broker (docs/kafka-hanging-transaction.md, "What a client can
 * do"): a partition's producer state ends the open transaction of a producer id at the next marker of that producer
 * id on the partition, whatever epoch began it (ProducerAppendInfo.appendEndTxnMarker). So a producer of the same
 * transactional id (the same producer id, a bumped epoch) that writes one record to the hanging partition in a
 * transaction of its own and ends that transaction ends the hanging records with it, with no ClusterAction: an abort
 * aborts them, a commit commits them. The attempts go on until a hang was met and healed both ways (abort first).
 */
it('ends its own hanging transaction with a transaction of the same transactional id, aborted or committed', async () => {
  const own = broker!;
  const kafka = new Kafka({ brokers: [own.broker], clientId: 'markers-heal', logLevel: logLevel.NOTHING });
  const topic = 'healed';
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 2, replicationFactor: 1 }] });
  await admin.disconnect();
  const producerOf = (): Producer =>
    kafka.producer({ transactionalId: 'markers-heal', idempotent: true, maxInFlightRequests: 1 });

  const variants: Array<'abort' | 'commit'> = ['abort', 'commit'];
  const healed: string[] = [];
  const attempts: string[] = [];
  for (let attempt = 1; attempt <= HEAL_ATTEMPTS && variants.length > 0; attempt += 1) {
    const producer = producerOf();
    await producer.connect();
    const transaction = await producer.transaction();
    await transaction.send({
      topic,
      messages: [0, 1].map((partition) => ({ partition, key: `a${attempt}`, value: `p${partition}` })),
    });
    const committing = transaction.commit();
    const killed = killOnceTransactionLogged(own);
    await committing.catch(() => undefined);
    await killed;
    await producer.disconnect().catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await own.restart();

    // The connector's next producer: InitProducerId (a bumped epoch of the same producer id).
    const next = producerOf();
    await next.connect();
    const open = await openOn(own, topic);
    if (open.length === 0) {
      await next.disconnect();
      attempts.push(`attempt ${attempt}: nothing open`);
      continue;
    }
    const variant = variants.shift()!;
    // The heal: one record to each hanging partition, in a transaction of the same transactional id, then its end.
    let heal = 'done';
    try {
      const healing = await next.transaction();
      await healing.send({
        topic,
        messages: open.map((o) => ({ partition: o.partition, key: `heal${attempt}`, value: 'heal' })),
      });
      await (variant === 'abort' ? healing.abort() : healing.commit());
    } catch (error) {
      heal = `failed: ${String(error)}`;
    }
    await next.disconnect();
    const stillOpen = await openOn(own, topic);
    // What read_committed shows now: up to a plain record written after the heal (seen only if the LSO moved on).
    const seen = await readCommittedUpToSentinel(kafka, topic, `s${attempt}`);
    const hangingKeyVisible = open.map((o) => seen.get(o.partition)?.includes(`a${attempt}`) ?? false);
    const line =
      `attempt ${attempt}: open ${open.map((o) => `${topic}-${o.partition}@${o.startOffset} (producer ${o.producerId})`).join(', ')}; ` +
      `heal by ${variant}: ${heal}; open after: ${stillOpen.length}; read_committed reached the end: ${[...seen.values()].every((k) => k.includes(`s${attempt}`))}; ` +
      `hanging records visible: ${hangingKeyVisible.join(',')}`;
    attempts.push(line);
    expect(heal, line).toBe('done');
    expect(stillOpen, line).toEqual([]);
    for (const p of [0, 1]) expect(seen.get(p), line).toContain(`s${attempt}`);
    // An abort marker aborts the hanging records; a commit marker commits them.
    expect(hangingKeyVisible, line).toEqual(open.map(() => variant === 'commit'));
    healed.push(variant);
    // Clean for the next attempt whatever happened.
    for (const o of stillOpen)
      await own.transactions(
        'abort',
        '--topic',
        topic,
        '--partition',
        String(o.partition),
        '--start-offset',
        o.startOffset,
      );
  }
  console.info(`healing hanging transactions with the same transactional id:\n${attempts.join('\n')}`);
  // A run that met no hang shows nothing: it fails, to be run again.
  expect(healed, attempts.join('\n')).toEqual(['abort', 'commit']);
}, 600_000);

const HEAL_ATTEMPTS = 16;

async function openOn(
  own: OwnBroker,
  topic: string,
): Promise<Array<{ partition: number; producerId: string; startOffset: string }>> {
  const open: Array<{ partition: number; producerId: string; startOffset: string }> = [];
  for (const partition of [0, 1]) {
    const described = await own.transactions(
      'describe-producers',
      '--topic',
      topic,
      '--partition',
      String(partition),
    );
    for (const o of openTransactions(described)) open.push({ partition, ...o });
  }
  return open;
}

/** Writes `sentinel` (not transactional) to both partitions, then reads read_committed until it is seen on both. */
async function readCommittedUpToSentinel(
  kafka: Kafka,
  topic: string,
  sentinel: string,
): Promise<Map<number, string[]>> {
  const plain = kafka.producer();
  await plain.connect();
  await plain.send({
    topic,
    messages: [0, 1].map((partition) => ({ partition, key: sentinel, value: 'end' })),
  });
  await plain.disconnect();
  const seen = new Map<number, string[]>([
    [0, []],
    [1, []],
  ]);
  const consumer = kafka.consumer({
    groupId: `heal-check-${sentinel}-${Date.now()}`,
    readUncommitted: false,
  });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 20_000);
    void consumer.run({
      eachMessage: async ({ partition, message }) => {
        seen.get(partition)?.push(message.key?.toString() ?? '');
        if ([...seen.values()].every((keys) => keys.includes(sentinel))) {
          clearTimeout(timer);
          resolve();
        }
      },
    });
  });
  await consumer.disconnect();
  return seen;
}
