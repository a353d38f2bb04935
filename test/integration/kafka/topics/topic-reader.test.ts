/**
 * The topic reader (offsets, token store, `offsets` command, tests) on a partition where aborted transactions
 * of several producers overlap: what kafkajs 2.2.4's own read_committed filter delivered as committed
 * (src/kafka/client/kafkajs-read-committed-fix.ts). Records of 700 kB against kafkajs's 1 MB fetch limit per partition
 * make each fetch hold one record, so every fetch after the first starts inside both aborted transactions.
 */
import type { Kafka, Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCommittedFixInstalled } from '../../../../src/kafka/client/kafkajs-read-committed-fix.js';
import { readTopicToEnd } from '../../../../src/kafka/topics/topic-reader.js';
import { createTopics, testKafka } from '../../../support/kafka.js';
import { uniqueName } from '../../../support/stack.js';

const big = (tag: string) => Buffer.concat([Buffer.from(tag), Buffer.alloc(700_000, 0x61)]);

describe('readTopicToEnd on a partition with overlapping aborted transactions of two producers', () => {
  let kafka: Kafka;
  const topic = uniqueName('overlapping-aborts');
  const producers: Producer[] = [];

  beforeAll(async () => {
    kafka = testKafka();
    await createTopics(kafka, [{ topic }]);
    const producer = async (id: string) => {
      const p = kafka.producer({
        transactionalId: `${topic}-${id}`,
        idempotent: true,
        maxInFlightRequests: 1,
      });
      await p.connect();
      producers.push(p);
      return p;
    };
    const [a, b, c] = [await producer('a'), await producer('b'), await producer('c')];
    const txA = await a.transaction();
    const txB = await b.transaction();
    await txA.send({ topic, messages: [{ key: 'a0', value: big('a0') }] });
    await txB.send({ topic, messages: [{ key: 'b1', value: big('b1') }] });
    await txA.send({ topic, messages: [{ key: 'a2', value: big('a2') }] });
    await txB.send({ topic, messages: [{ key: 'b3', value: big('b3') }] });
    await txA.abort();
    await txB.abort();
    const txC = await c.transaction();
    await txC.send({ topic, messages: [{ key: 'c4', value: Buffer.from('committed') }] });
    await txC.commit();
  });

  afterAll(async () => {
    for (const p of producers) await p.disconnect();
  });

  it('delivers only the committed record, none of either aborted transaction', async () => {
    expect(readCommittedFixInstalled()).toBe(true);
    const keys: string[] = [];
    // Until the commit's marker is readable (a commit returns before its markers reach the partition).
    for (let attempt = 0; attempt < 50 && !keys.includes('c4'); attempt++) {
      keys.length = 0;
      await readTopicToEnd(
        kafka,
        { topic, groupIdPrefix: 'test-overlapping-aborts', timeoutMs: 30_000 },
        (r) => keys.push(r.key?.toString() ?? ''),
      );
    }
    expect(keys).toEqual(['c4']);
  });
});
