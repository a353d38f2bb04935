/**
 * The chaos driver's proof that a kill landed inside a transaction: the last stable offset of a partition
 * stays below its high watermark while a transaction is open, and meets it once the transaction ends.
 */
import { describe, expect, it } from 'vitest';
import { lastStableOffsets } from '../../../tools/chaos/last-stable-offsets.js';
import { createTopics, testKafka } from '../../support/kafka.js';
import { stackEndpoints, uniqueName } from '../../support/stack.js';

describe('lastStableOffsets', () => {
  it('shows an open transaction as a last stable offset below the high watermark, and its end as equal', async () => {
    const kafka = testKafka();
    const topic = uniqueName('lso');
    await createTopics(kafka, [{ topic, numPartitions: 2 }]);
    const broker = stackEndpoints().brokers[0] ?? '';
    const producer = kafka.producer({
      transactionalId: uniqueName('lso-tx'),
      maxInFlightRequests: 1,
      idempotent: true,
    });
    await producer.connect();
    try {
      const transaction = await producer.transaction();
      await transaction.send({ topic, messages: [{ key: 'k', value: 'v', partition: 1 }] });
      const open = await lastStableOffsets(broker, topic, [0, 1]);
      expect(open).toEqual([
        { partition: 0, lastStable: 0n, high: 0n },
        { partition: 1, lastStable: 0n, high: 1n },
      ]);
      await transaction.commit();
      const committed = await lastStableOffsets(broker, topic, [0, 1]);
      expect(committed[1]?.lastStable).toBe(committed[1]?.high);
      expect(committed[1]?.high).toBe(2n); // the record and the commit marker
    } finally {
      await producer.disconnect();
    }
  });
});
