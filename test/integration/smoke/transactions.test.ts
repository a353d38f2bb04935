/**
 * Smoke: the broker runs real transactions. A committed transaction spanning two topics is visible to
 * a read_committed consumer (kafkajs' default isolation), an aborted one is not, and a second producer
 * with the same transactionalId fences the first.
 */
import type { Kafka, KafkaMessage, Producer } from 'kafkajs';
import { afterEach, describe, expect, it } from 'vitest';
import { uniqueName } from '../../support/stack.js';
import { createTopics, testKafka } from '../../support/kafka.js';

const producers: Producer[] = [];
afterEach(async () => {
  await Promise.all(producers.splice(0).map((p) => p.disconnect()));
});

async function transactionalProducer(kafka: Kafka, transactionalId: string): Promise<Producer> {
  const producer = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 });
  producers.push(producer);
  await producer.connect();
  return producer;
}

/** Reads each single-partition topic until a record with value `sentinel` arrives; returns the values before it. */
async function readUntilSentinel(
  kafka: Kafka,
  topics: string[],
  sentinel: string,
): Promise<Map<string, string[]>> {
  const seen = new Map<string, string[]>(topics.map((t) => [t, []]));
  const done = new Set<string>();
  // A fresh group per read: the broker's group.initial.rebalance.delay.ms=0 makes the join immediate.
  const consumer = kafka.consumer({ groupId: uniqueName('smoke-reader'), maxWaitTimeInMs: 100 });
  await consumer.connect();
  try {
    await consumer.subscribe({ topics, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      consumer.on(consumer.events.CRASH, ({ payload }) => reject(payload.error));
      void consumer.run({
        eachMessage: async ({ topic, message }: { topic: string; message: KafkaMessage }) => {
          const value = message.value?.toString() ?? '';
          if (value === sentinel) done.add(topic);
          else seen.get(topic)?.push(value);
          if (done.size === topics.length) resolve();
        },
      });
    });
  } finally {
    await consumer.disconnect();
  }
  return seen;
}

describe('transactions', () => {
  it('a read_committed consumer sees a committed two-topic transaction and nothing of an aborted one', async () => {
    const kafka = testKafka();
    const [calls, offsets] = [uniqueName('smoke-txn-a'), uniqueName('smoke-txn-b')];
    await createTopics(kafka, [{ topic: calls }, { topic: offsets }]);
    const producer = await transactionalProducer(kafka, uniqueName('smoke-txn'));

    const committed = await producer.transaction();
    await committed.send({
      topic: calls,
      messages: [
        { key: 'k1', value: 'committed-1' },
        { key: 'k2', value: 'committed-2' },
      ],
    });
    await committed.send({ topic: offsets, messages: [{ key: 'loc', value: 'committed-offset' }] });
    await committed.commit();

    const aborted = await producer.transaction();
    await aborted.send({ topic: calls, messages: [{ key: 'k3', value: 'aborted-1' }] });
    await aborted.send({ topic: offsets, messages: [{ key: 'loc', value: 'aborted-offset' }] });
    await aborted.abort();

    // A last committed transaction: reaching it proves the consumer went past the aborted records.
    const sentinel = await producer.transaction();
    await sentinel.send({ topic: calls, messages: [{ value: 'end' }] });
    await sentinel.send({ topic: offsets, messages: [{ value: 'end' }] });
    await sentinel.commit();

    const seen = await readUntilSentinel(kafka, [calls, offsets], 'end');
    expect(seen.get(calls)).toEqual(['committed-1', 'committed-2']);
    expect(seen.get(offsets)).toEqual(['committed-offset']);
  });

  it('a second producer with the same transactionalId fences the first, whose next transactional send fails', async () => {
    const kafka = testKafka();
    const topic = uniqueName('smoke-fence');
    await createTopics(kafka, [{ topic }]);
    const transactionalId = uniqueName('smoke-fence-txn');

    const first = await transactionalProducer(kafka, transactionalId);
    const before = await first.transaction();
    await before.send({ topic, messages: [{ value: 'first-before-fence' }] });
    await before.commit();

    const second = await transactionalProducer(kafka, transactionalId);
    const fencing = await second.transaction(); // InitProducerId bumps the epoch: the first is now fenced.
    await fencing.send({ topic, messages: [{ value: 'second' }] });
    await fencing.commit();

    const after = await first.transaction();
    // kafkajs 2.2.4 knows no PRODUCER_FENCED code: a fenced producer gets INVALID_PRODUCER_EPOCH.
    const failure: unknown = await after
      .send({ topic, messages: [{ value: 'first-after-fence' }] })
      .then(() => after.commit())
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(failure).toBeInstanceOf(Error);
    expect((failure as { type?: string }).type).toMatch(/INVALID_PRODUCER_EPOCH|PRODUCER_FENCED/);

    const end = await second.transaction();
    await end.send({ topic, messages: [{ value: 'end' }] });
    await end.commit();
    const seen = await readUntilSentinel(kafka, [topic], 'end');
    expect(seen.get(topic)).toEqual(['first-before-fence', 'second']);
  });
});
