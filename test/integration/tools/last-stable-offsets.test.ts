/**
 * The chaos driver's proof that a kill landed inside a transaction: the last stable offset of a partition
 * stays below its high watermark while a transaction is open, and meets it once the transaction ends.
 */
import { describe, expect, it } from 'vitest';
import { lastStableOffsets } from '../../../tools/chaos/last-stable-offsets.js';
import { createTopics, eventually, testKafka } from '../../support/kafka.js';
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
      // The coordinator writes the commit marker after answering EndTxn: the LSO catches up soon after.
      await eventually(
        async () => {
          const [, p1] = await lastStableOffsets(broker, topic, [0, 1]);
          return p1 !== undefined && p1.lastStable === p1.high && p1.high === 2n; // the record and the marker
        },
        30_000,
        'the last stable offset to reach the commit marker',
      );
    } finally {
      await producer.disconnect();
    }
  });
});
