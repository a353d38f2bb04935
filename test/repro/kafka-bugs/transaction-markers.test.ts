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
