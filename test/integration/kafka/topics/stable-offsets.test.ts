/**
 * Waiting for open transactions before an offsets read (issue 20, "a broker killed inside a commit"): the high
 * watermark comes from kafkajs's read_uncommitted ListOffsets, the last stable offset from its read_committed one,
 * and a read that must see every earlier write settled waits until the second reaches the first.
 */
import type { Kafka, Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectorError } from '../../../../src/errors/index.js';
import { awaitSettledTransactions, highWatermarks } from '../../../../src/kafka/topics/stable-offsets.js';
import { endOffsets } from '../../../../src/kafka/topics/topic-reader.js';
import { createTopics, testKafka } from '../../../support/kafka.js';
import { uniqueName } from '../../../support/stack.js';

describe('awaitSettledTransactions on a partition with an open transaction', () => {
  let kafka: Kafka;
  let producer: Producer;
  const topic = uniqueName('stable-offsets');

  beforeAll(async () => {
    kafka = testKafka();
    await createTopics(kafka, [{ topic, numPartitions: 2 }]);
    producer = kafka.producer({
      transactionalId: `${topic}-writer`,
      idempotent: true,
      maxInFlightRequests: 1,
    });
    await producer.connect();
  });

  afterAll(async () => {
    await producer.disconnect();
  });

  it('sees the open records in the high watermark only, waits for the transaction, and names a partition it never leaves', async () => {
    const settled = kafka.producer({ idempotent: true });
    await settled.connect();
    await settled.send({ topic, messages: [{ key: 'a', value: 'committed', partition: 1 }] });
    await settled.disconnect();
    const open = await producer.transaction();
    await open.send({ topic, messages: [{ key: 'b', value: 'open', partition: 0 }] });

    expect(await highWatermarks(kafka, topic, [0, 1])).toEqual(
      new Map([
        [0, 1n],
        [1, 1n],
      ]),
    );
    const stable = new Map((await endOffsets(kafka, topic)).map((e) => [e.partition, e.end]));
    expect(stable).toEqual(
      new Map([
        [0, 0n],
        [1, 1n],
      ]),
    );

    // The partition without an open transaction is settled at once; the other one is named once the wait is over.
    await awaitSettledTransactions(kafka, { topic, partitions: [1], timeoutMs: 1_000 });
    const noticed: unknown[] = [];
    const stuck = await awaitSettledTransactions(kafka, {
      topic,
      partitions: [0, 1],
      timeoutMs: 500,
      waitingNoticeMs: 0,
      onLongWait: (open) => noticed.push(open),
    }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(stuck).toBeInstanceOf(ConnectorError);
    expect((stuck as ConnectorError).code).toBe('KAFKA_TRANSACTION_OPEN');
    expect((stuck as ConnectorError).message).toContain('partition 0 stable at offset 0');
    expect((stuck as ConnectorError).message).toContain('kafka-transactions.sh');
    expect(noticed).toEqual([[{ partition: 0, stableOffset: '0' }]]); // said once, while waiting

    // Ended while a read waits: the wait resolves, and a read_committed read now shows the commit.
    const waiting = awaitSettledTransactions(kafka, { topic, partitions: [0, 1], timeoutMs: 30_000 });
    await open.commit();
    await waiting;
    const after = new Map((await endOffsets(kafka, topic)).map((e) => [e.partition, e.end]));
    expect(after.get(0)).toBe(2n); // the record and the commit marker
  });
});
