/**
 * The chaos checker's witness (tools/chaos/witness/read_topic.py, librdkafka) against the real broker: it
 * returns exactly the committed records when two transactional producers interleave committed and aborted
 * transactions in one partition (where stock kafkajs's read_committed filter fails), reads every partition to
 * its high watermark (also past trailing aborted records and markers), and names a partition it could not read
 * to its end instead of stopping quietly.
 */
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import type { Kafka, Producer } from 'kafkajs';
import { afterEach, describe, expect, it } from 'vitest';
import { readWithWitness, type WitnessLine } from '../../../tools/chaos/witness.js';
import { createTopics, testKafka } from '../../support/kafka.js';
import { stackEndpoints, uniqueName } from '../../support/stack.js';

const schema = {
  type: 'record',
  name: 'WitnessCall',
  namespace: 'com.callsconnector.chaos',
  fields: [
    { name: 'uid', type: 'string' },
    { name: 'updatedAt', type: { type: 'long', logicalType: 'timestamp-micros' } },
    { name: 'note', type: ['null', 'string'], default: null },
  ],
};
const UPDATED_AT = 1_767_323_045_678_901; // micros: stays a long on the wire and in the witness's output

const producers: Producer[] = [];
afterEach(async () => {
  await Promise.all(producers.splice(0).map((p) => p.disconnect()));
});

async function transactional(kafka: Kafka, name: string): Promise<Producer> {
  const producer = kafka.producer({
    transactionalId: uniqueName(name),
    maxInFlightRequests: 1,
    idempotent: true,
  });
  await producer.connect();
  producers.push(producer);
  return producer;
}

const brokers = (): string => stackEndpoints().brokers.join(',');

async function witness(
  topic: string,
  decode: 'avro' | 'text',
  timeoutMs = 60_000,
): Promise<{ lines: WitnessLine[]; summary: Awaited<ReturnType<typeof readWithWitness>> }> {
  const lines: WitnessLine[] = [];
  const summary = await readWithWitness(
    { brokers: brokers(), topic, decode, registryUrl: stackEndpoints().registryUrl, timeoutMs },
    (line) => lines.push(line),
  );
  return { lines, summary };
}

describe('the chaos witness', () => {
  it('returns exactly the committed records of interleaved transactional producers and reads every partition to its end', async () => {
    const kafka = testKafka();
    const topic = uniqueName('witness');
    await createTopics(kafka, [{ topic, numPartitions: 4 }]);
    const registry = new SchemaRegistry({ host: stackEndpoints().registryUrl });
    const { id } = await registry.register(
      { type: SchemaType.AVRO, schema: JSON.stringify(schema) },
      { subject: `${topic}-value` },
    );
    const message = async (uid: string, partition: number) => ({
      key: uid,
      partition,
      value: await registry.encode(id, { uid, updatedAt: UPDATED_AT, note: `${uid}-note` }),
    });
    const a = await transactional(kafka, 'witness-a');
    const b = await transactional(kafka, 'witness-b');

    const first = await a.transaction();
    await first.send({ topic, messages: [await message('a1', 0), await message('a2', 1)] });
    await first.commit();
    // A's second transaction stays open while B commits into the same partitions: then A aborts.
    const aborted = await a.transaction();
    await aborted.send({
      topic,
      messages: [await message('a-aborted-1', 0), await message('a-aborted-2', 2)],
    });
    const other = await b.transaction();
    // b2 is a backfill's re-read: the witness reports its signal header.
    const reRead = { ...(await message('b2', 2)), headers: { 'calls-connector.source.signal': 'sig-1' } };
    await other.send({ topic, messages: [await message('b1', 0), reRead] });
    await other.commit();
    await aborted.send({ topic, messages: [await message('a-aborted-3', 0)] });
    await aborted.abort();
    // Partition 1 ends with an aborted transaction (records and marker the reader never returns).
    const last = await a.transaction();
    await last.send({ topic, messages: [await message('a-aborted-4', 1)] });
    await last.abort();

    const { lines, summary } = await witness(topic, 'avro');

    expect(lines.map((l) => `${l.partition}:${l.key}`).sort()).toEqual(['0:a1', '0:b1', '1:a2', '2:b2']);
    expect(lines.map((l) => [l.key, l.signal]).sort()).toEqual([
      ['a1', null],
      ['a2', null],
      ['b1', null],
      ['b2', 'sig-1'],
    ]);
    expect(lines.find((l) => l.key === 'b1')).toMatchObject({
      schemaId: id,
      keyBase64: null,
      value: { uid: 'b1', updatedAt: UPDATED_AT, note: 'b1-note' },
    });
    expect(summary.topicExists).toBe(true);
    expect(summary.partitions.map((p) => [p.partition, p.records, p.reachedEnd])).toEqual([
      [0, 2, true],
      [1, 1, true],
      [2, 1, true],
      [3, 0, true],
    ]);
    for (const p of summary.partitions) expect(p.position).toBe(p.high);
    // Each partition but the empty one holds aborted records or markers past its last committed record.
    expect(summary.partitions.map((p) => p.high)).toEqual([7, 4, 4, 0]);
  });

  it('names a partition it could not read to its end (an open transaction) and still returns what it read', async () => {
    const kafka = testKafka();
    const topic = uniqueName('witness-open');
    await createTopics(kafka, [{ topic, numPartitions: 2 }]);
    const producer = await transactional(kafka, 'witness-open');
    const committed = await producer.transaction();
    await committed.send({
      topic,
      messages: [
        { key: 'k0', value: '{"watermark":"x"}', partition: 0 },
        { key: 'k1', value: null, partition: 1 },
      ],
    });
    await committed.commit();
    const open = await producer.transaction();
    await open.send({ topic, messages: [{ key: 'k1', value: 'pending', partition: 1 }] });
    try {
      const { lines, summary } = await witness(topic, 'text', 10_000);
      expect(lines.map((l) => [l.partition, l.key, l.value]).sort()).toEqual([
        [0, 'k0', '{"watermark":"x"}'],
        [1, 'k1', null],
      ]);
      const [p0, p1] = summary.partitions;
      expect(p0).toMatchObject({ partition: 0, reachedEnd: true, high: 2 });
      expect(p1).toMatchObject({ partition: 1, reachedEnd: false, lastStable: 2, high: 3 });
    } finally {
      await open.abort();
    }
  });

  it('fails, saying why, on a value that is not in the Confluent wire format', async () => {
    const kafka = testKafka();
    const topic = uniqueName('witness-bad');
    await createTopics(kafka, [{ topic }]);
    const producer = kafka.producer();
    await producer.connect();
    producers.push(producer);
    await producer.send({ topic, messages: [{ key: 'k', value: '{"not":"avro"}' }] });
    await expect(witness(topic, 'avro')).rejects.toThrow(
      new RegExp(
        `the chaos witness failed reading ${topic} \\(exit 1\\): .*not the Confluent wire format`,
        's',
      ),
    );
  });

  it('reports a topic that does not exist as such, with no partitions', async () => {
    const { lines, summary } = await witness(uniqueName('witness-none'), 'text');
    expect(lines).toEqual([]);
    expect(summary).toMatchObject({ topicExists: false, partitions: [] });
  });
});
