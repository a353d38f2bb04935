/**
 * Offsets in the compacted topic: round trip through the sink, tombstone and --to resets, keys of
 * other connectors, unreadable values, and the start order that makes a crashed instance's open
 * transaction harmless.
 */
import { describe, expect, it } from 'vitest';
import { FatalError } from '../../../../src/errors/index.js';
import { KafkaOffsetStore } from '../../../../src/kafka/offsets/kafka-offset-store.js';
import { encodeOffsetValue, offsetKey } from '../../../../src/kafka/offsets/offset-codec.js';
import { writeLocationOffset } from '../../../../src/kafka/offsets/offset-writer.js';
import { transactionalIdFor } from '../../../../src/kafka/sinks/transactional-id.js';
import type { LocationOffset } from '../../../../src/sync/model.js';
import {
  loadOffsetsWhen,
  readCommitted,
  readCommittedAtLeast,
  sampleCall,
  startTestSession,
  useKafkaSessions,
  testKafka,
  testKafkaConfig,
} from '../../../support/kafka.js';
import { uniqueName } from '../../../support/stack.js';
import { rejectionOf } from '../../../support/rejection.js';

const { started } = useKafkaSessions();

const LOCATION_A = '00000000-0000-4000-8000-00000000000a';
const LOCATION_B = '00000000-0000-4000-8000-00000000000b';

const offsetA: LocationOffset = {
  since: '2024-05-01T00:00:00Z',
  cursor: 'opaque-cursor==',
  watermark: '2024-05-01T10:00:00.123456Z',
  boundary: ['u1', 'u2'],
};
const offsetB: LocationOffset = {
  since: null,
  cursor: null,
  watermark: '2024-05-02T00:00:00Z',
  boundary: ['u9'],
  boundaryOverflow: true,
};

function storeFor(connectorName: string, topic: string, loadTimeoutMs = 30_000): KafkaOffsetStore {
  return new KafkaOffsetStore({
    kafka: testKafka(),
    topic,
    connectorName,
    groupIdPrefix: 'test-offsets',
    loadTimeoutMs,
  });
}

describe('KafkaOffsetStore', () => {
  it('loads the latest offset the sink stored per location, ignoring other connectors sharing the topic', async () => {
    const { session, config } = await started();
    await session.sink.commitPage({
      locationUid: LOCATION_A,
      calls: [],
      deadLetters: [],
      offset: { ...offsetA, cursor: 'older' },
    });
    await session.sink.commitPage({
      locationUid: LOCATION_A,
      calls: [sampleCall()],
      deadLetters: [],
      offset: offsetA,
    });
    await session.sink.commitPage({ locationUid: LOCATION_B, calls: [], deadLetters: [], offset: offsetB });
    await writeLocationOffset(
      testKafka(),
      { topic: config.kafka.offsetsTopic, connectorName: 'another-connector', locationUid: LOCATION_A },
      { ...offsetA, cursor: 'not ours' },
    );

    const offsets = await loadOffsetsWhen(
      storeFor(config.connector.name, config.kafka.offsetsTopic),
      (o) => o.size === 2,
    );
    expect(offsets).toEqual(
      new Map([
        [LOCATION_A, offsetA],
        [LOCATION_B, offsetB],
      ]),
    );
  });

  it('forgets a location reset with a tombstone and starts a location reset --to at that time', async () => {
    const { session, config } = await started();
    await session.sink.commitPage({ locationUid: LOCATION_A, calls: [], deadLetters: [], offset: offsetA });
    await session.sink.commitPage({ locationUid: LOCATION_B, calls: [], deadLetters: [], offset: offsetB });
    const target = { topic: config.kafka.offsetsTopic, connectorName: config.connector.name };

    await writeLocationOffset(testKafka(), { ...target, locationUid: LOCATION_A }, null);
    const resetTo: LocationOffset = {
      since: '2024-06-01T00:00:00Z',
      cursor: null,
      watermark: null,
      boundary: [],
    };
    await writeLocationOffset(testKafka(), { ...target, locationUid: LOCATION_B }, resetTo);

    const offsets = await loadOffsetsWhen(
      storeFor(config.connector.name, config.kafka.offsetsTopic),
      (o) => !o.has(LOCATION_A),
    );
    expect(offsets).toEqual(new Map([[LOCATION_B, resetTo]]));
  });

  it('fails with a fatal error naming the key when a stored value is unreadable', async () => {
    const config = testKafkaConfig();
    await started({ kafka: config, connectorName: 'corrupt-offsets' });
    const producer = testKafka().producer();
    await producer.connect();
    await producer.send({
      topic: config.offsetsTopic,
      messages: [
        {
          key: offsetKey('corrupt-offsets', LOCATION_A),
          value: JSON.stringify({ version: 99, since: null }),
        },
      ],
    });
    await producer.disconnect();

    const error = await rejectionOf(storeFor('corrupt-offsets', config.offsetsTopic).loadAll());
    expect(error).toBeInstanceOf(FatalError);
    expect((error as FatalError).code).toBe('OFFSET_UNREADABLE');
    expect((error as FatalError).message).toContain(offsetKey('corrupt-offsets', LOCATION_A));
    expect((error as FatalError).message).toContain('version 99');
  });

  it('starts past a transaction a crashed instance left open: its offset is not loaded and new commits are readable at once', async () => {
    const config = testKafkaConfig();
    const connectorName = uniqueName('crashed');
    const first = await startTestSession({ kafka: config, connectorName });
    await first.session.sink.commitPage({
      locationUid: LOCATION_A,
      calls: [],
      deadLetters: [],
      offset: offsetA,
    });
    await first.session.close();

    // The "crashed" instance: same transactionalId, a transaction with an offset record, never ended.
    const zombie = testKafka().producer({
      transactionalId: transactionalIdFor(connectorName),
      idempotent: true,
      maxInFlightRequests: 1,
      transactionTimeout: 120_000,
    });
    await zombie.connect();
    const open = await zombie.transaction();
    await open.send({
      topic: config.offsetsTopic,
      messages: [
        {
          key: offsetKey(connectorName, LOCATION_A),
          value: encodeOffsetValue({ ...offsetA, cursor: 'uncommitted' }),
        },
      ],
    });

    try {
      // While that transaction is open, nothing written after it is readable (the LSO is stuck before it).
      const other = testKafka().producer();
      await other.connect();
      await other.send({
        topic: config.offsetsTopic,
        messages: [{ key: 'written-after-the-open-transaction', value: null }],
      });
      await other.disconnect();
      const beforeStart = await readCommitted(testKafka(), config.offsetsTopic);
      expect(beforeStart.map((r) => r.key?.toString())).toEqual([offsetKey(connectorName, LOCATION_A)]);

      const second = await started({ kafka: config, connectorName });
      // start() initialised the producer (aborting the open transaction) before loading offsets.
      expect(second.session.initialOffsets).toEqual(new Map([[LOCATION_A, offsetA]]));

      await second.session.sink.commitPage({
        locationUid: LOCATION_B,
        calls: [],
        deadLetters: [],
        offset: offsetB,
      });
      await loadOffsetsWhen(second.session.offsetStore, (o) => o.has(LOCATION_B));
      const records = await readCommittedAtLeast(testKafka(), config.offsetsTopic, 3);
      expect(records.map((r) => r.key?.toString())).toEqual([
        offsetKey(connectorName, LOCATION_A),
        'written-after-the-open-transaction',
        offsetKey(connectorName, LOCATION_B),
      ]);
      expect(records[0]?.value?.toString()).toBe(encodeOffsetValue(offsetA));
    } finally {
      await zombie.disconnect();
    }
  });
});
