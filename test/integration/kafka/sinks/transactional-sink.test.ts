/**
 * The exactly-once sink on the real broker and registry: group commit, atomicity of a failed
 * transaction, standing down when a newer instance fenced it, dead letters, and the published Avro.
 */
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { describe, expect, it } from 'vitest';
import { ConnectorError, FatalError } from '../../../../src/errors/index.js';
import { isoToEpochMicros } from '../../../../src/kafka/avro/timestamps.js';
import { DLQ_HEADERS } from '../../../../src/kafka/records/dead-letter-message.js';
import { transactionalIdFor } from '../../../../src/kafka/sinks/transactional-id.js';
import { KafkaOffsetStore } from '../../../../src/kafka/offsets/kafka-offset-store.js';
import { locationPartition } from '../../../../src/kafka/group/location-partition.js';
import type { LocationOffset } from '../../../../src/sync/model.js';
import type { PageCommit } from '../../../../src/sync/ports.js';
import {
  counterValue,
  loadOffsetsWhen,
  readCommittedAtLeast,
  sampleCall,
  useKafkaSessions,
  testKafka,
  testKafkaConfig,
} from '../../../support/kafka.js';
import { stackEndpoints } from '../../../support/stack.js';
import { rejectionOf } from '../../../support/rejection.js';

const { started } = useKafkaSessions();

function location(n: number): string {
  return `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
}

function offsetAt(updatedAt: string, uids: string[]): LocationOffset {
  return { since: null, cursor: `cursor-after-${updatedAt}`, watermark: updatedAt, boundary: uids };
}

function page(locationUid: string, calls = 2, updatedAt = '2024-05-01T10:00:00.000001Z'): PageCommit {
  const pageCalls = Array.from({ length: calls }, () => sampleCall({ locationUid, updatedAt }));
  return {
    locationUid,
    calls: pageCalls,
    deadLetters: [],
    offset: offsetAt(
      updatedAt,
      pageCalls.map((c) => c.uid),
    ),
  };
}

/** Fences the sink's producer the way a second instance would: InitProducerId with the same transactionalId. */
async function fenceWithSecondInstance(connectorName: string): Promise<void> {
  const producer = testKafka().producer({
    transactionalId: transactionalIdFor(connectorName),
    idempotent: true,
    maxInFlightRequests: 1,
  });
  await producer.connect();
  const init = await producer.transaction();
  await init.abort();
  await producer.disconnect();
}

async function rejection(promise: Promise<unknown>): Promise<ConnectorError> {
  const error = await rejectionOf(promise);
  expect(error).toBeInstanceOf(ConnectorError);
  return error as ConnectorError;
}

describe('TransactionalRecordSink', () => {
  it('merges pages offered while a transaction is in flight into the next one and resolves every caller once its transaction commits', async () => {
    const { session, metrics, config } = await started();
    const pages = Array.from({ length: 20 }, (_, i) => page(location(i + 1), 3));

    const outcomes = await Promise.all(pages.map((p) => session.sink.commitPage(p)));
    expect(new Set(outcomes.map((o) => o.kind))).toEqual(new Set(['stored']));

    const commits = await counterValue(metrics.transactions, { result: 'commit' });
    expect(commits).toBeGreaterThanOrEqual(2);
    expect(commits).toBeLessThan(pages.length);

    const kafka = testKafka();
    const published = await readCommittedAtLeast(kafka, config.kafka.topic, 60);
    expect(published.map((r) => r.key?.toString()).sort()).toEqual(
      pages.flatMap((p) => p.calls.map((c) => c.uid)).sort(),
    );
    const offsets = await loadOffsetsWhen(session.offsetStore, (o) => o.size === pages.length);
    for (const p of pages) expect(offsets.get(p.locationUid)).toEqual(p.offset);
  });

  it('reads back the offsets of just the locations asked, from the partitions their keys hash to (what a failed commit is settled by)', async () => {
    const { session, config } = await started({ kafka: testKafkaConfig({ offsetsTopicPartitions: 4 }) });
    const pages = Array.from({ length: 12 }, (_, i) => page(location(i + 1), 1));
    await Promise.all(pages.map((p) => session.sink.commitPage(p)));
    await loadOffsetsWhen(session.offsetStore, (o) => o.size === pages.length);
    const store = new KafkaOffsetStore({
      kafka: testKafka(),
      topic: config.kafka.offsetsTopic,
      connectorName: config.connector.name,
      groupIdPrefix: 'test-reader',
      loadTimeoutMs: 30_000,
    });
    // Two locations of different partitions, and one without an offset stored.
    const partitionOf = (uid: string) => locationPartition(config.connector.name, uid, 4);
    const first = pages[0]!;
    const other = pages.find((p) => partitionOf(p.locationUid) !== partitionOf(first.locationUid))!;
    const read = await store.loadLocations([first.locationUid, other.locationUid, location(99)]);
    expect(read).toEqual(
      new Map([
        [first.locationUid, first.offset],
        [other.locationUid, other.offset],
      ]),
    );
  });

  it('splits queued pages into transactions under the broker batch limit, so a one-partition topic takes more than 1 MiB at once', async () => {
    const { session, metrics, config } = await started({ kafka: testKafkaConfig({ topicPartitions: 1 }) });
    // 40 pages of 100 calls with ~300-byte phone fields: about 2.5 MiB, all queued together.
    const pages = Array.from({ length: 40 }, (_, i) => ({
      ...page(location(i + 1), 0),
      calls: Array.from({ length: 100 }, () =>
        sampleCall({ locationUid: location(i + 1), locationPhoneNumber: 'p'.repeat(300) }),
      ),
    }));

    await Promise.all(pages.map((p) => session.sink.commitPage(p)));

    expect(await counterValue(metrics.transactions, { result: 'abort' })).toBe(0);
    expect(await counterValue(metrics.transactions, { result: 'commit' })).toBeGreaterThanOrEqual(4);
    expect(await readCommittedAtLeast(testKafka(), config.kafka.topic, 4000)).toHaveLength(4000);
  });

  it('commits a page whose records, each within the limit, together outgrow one partition batch: sent in parts of its one transaction', async () => {
    // A byte cap above the broker's limit, so that the large page shares a transaction with a healthy one.
    const { session, metrics, config } = await started({
      kafka: testKafkaConfig({ maxBytesPerTransaction: 10_000_000, topicPartitions: 1 }),
    });
    const first = page(location(1));
    const healthy = page(location(2));
    // Three calls of 400 kB, each a valid record, together over the broker's message.max.bytes (1 MiB) in the
    // one partition: in one send the broker would refuse the batch, and the page would be retried for ever.
    const large: PageCommit = {
      ...page(location(3), 0),
      calls: Array.from({ length: 3 }, () =>
        sampleCall({ locationUid: location(3), locationPhoneNumber: 'x'.repeat(400_000) }),
      ),
    };

    await Promise.all([
      session.sink.commitPage(first),
      session.sink.commitPage(healthy),
      session.sink.commitPage(large),
    ]);

    expect(await counterValue(metrics.transactions, { result: 'abort' })).toBe(0);
    // At least: a commit returns before its markers reach the partition, so a read at once may end before them.
    const expected = [...first.calls, ...healthy.calls, ...large.calls].map((c) => c.uid).sort();
    const records = await readCommittedAtLeast(testKafka(), config.kafka.topic, expected.length);
    expect(records.map((r) => r.key?.toString()).sort()).toEqual(expected);
    await loadOffsetsWhen(
      session.offsetStore,
      (o) => o.has(location(1)) && o.has(location(2)) && o.has(location(3)),
    );
  });

  it('stands down when a newer instance fenced it: the page is rejected for good, nothing of it is visible, and no producer fences the newer one back', async () => {
    const fatalErrors: FatalError[] = [];
    const { session, config } = await started({ onFatal: (e) => fatalErrors.push(e) });
    const before = page(location(1));
    const fenced = page(location(1), 2, '2024-05-01T11:00:00Z');
    await session.sink.commitPage(before);
    const generation = session.sink.generation?.();

    await fenceWithSecondInstance(config.connector.name);
    const error = await rejection(session.sink.commitPage(fenced));
    expect(error).toBeInstanceOf(FatalError);
    expect(error.code).toBe('KAFKA_FENCED_BY_ANOTHER_INSTANCE');
    expect(error.message).toContain(config.connector.name);
    expect(fatalErrors).toEqual([error]);
    expect(await rejection(session.sink.commitPage(page(location(2))))).toBe(error);
    // No producer was initialised after the fencing (an initialisation would fence the newer instance back).
    expect(session.sink.generation?.()).toBe(generation);
    expect((await session.offsetStore.loadAll()).get(location(1))).toEqual(before.offset);
    const keys = (await readCommittedAtLeast(testKafka(), config.kafka.topic, before.calls.length)).map((r) =>
      r.key?.toString(),
    );
    expect(keys.sort()).toEqual(before.calls.map((c) => c.uid).sort());
  });

  it('writes dead letters to the DLQ topic with headers saying why, in the page transaction, and routes a call the schema rejects there too', async () => {
    const { session, metrics, config } = await started();
    const good = sampleCall({ locationUid: location(1) });
    const unencodable = sampleCall({ locationUid: location(1), updatedAt: 'yesterday at noon' });
    await session.sink.commitPage({
      locationUid: location(1),
      calls: [good, unencodable],
      deadLetters: [
        {
          locationUid: location(1),
          code: 'ITEM_NO_UID',
          message: 'the item has no uid',
          payload: '{"updatedAt":"2024-05-01T10:00:00Z"}',
        },
      ],
      offset: offsetAt(good.updatedAt, [good.uid]),
    });

    const kafka = testKafka();
    expect((await readCommittedAtLeast(kafka, config.kafka.topic, 1)).map((r) => r.key?.toString())).toEqual([
      good.uid,
    ]);
    const dlq = await readCommittedAtLeast(kafka, config.kafka.dlqTopic, 2);
    const headers = dlq.map((r) =>
      Object.fromEntries(Object.entries(r.headers ?? {}).map(([k, v]) => [k, v?.toString()])),
    );
    expect(headers.map((h) => h[DLQ_HEADERS.code])).toEqual(['ITEM_NO_UID', 'ITEM_SCHEMA_REJECTED']);
    for (const h of headers) {
      expect(h[DLQ_HEADERS.location]).toBe(location(1));
      expect(h[DLQ_HEADERS.connector]).toBe(config.connector.name);
      expect(Number.isNaN(Date.parse(h[DLQ_HEADERS.failedAt] ?? ''))).toBe(false);
      expect(h[DLQ_HEADERS.message]).toBeTruthy();
    }
    expect(headers[1]?.[DLQ_HEADERS.message]).toContain('updatedAt');
    const rejected = JSON.parse(dlq[1]?.value?.toString() ?? '{}') as Record<string, unknown>;
    expect(rejected.uid).toBe(unencodable.uid);
    expect(rejected).not.toHaveProperty('customerPhoneNumber');
    expect(await counterValue(metrics.deadLetters, { code: 'ITEM_SCHEMA_REJECTED' })).toBe(1);
    // The page's own dead letters are the sync engine's to count; the sink counts only what it diverted.
    expect(await counterValue(metrics.deadLetters, { code: 'ITEM_NO_UID' })).toBe(0);
    expect(await counterValue(metrics.recordsSkipped, { reason: 'dlq' })).toBe(1);
  });

  it('publishes values in the Confluent wire format that the registry decodes to the published call, keyed by uid', async () => {
    const { session, config } = await started();
    const call = sampleCall({
      locationUid: location(1),
      updatedAt: '2024-05-01T10:00:00.123456+02:00',
      customerPhoneNumber: null,
      customerPhoneNumberRedacted: true,
      isPrivate: null,
      enriched: false,
      startedAt: null,
      endedAt: null,
      conversationUid: null,
    });
    await session.sink.commitPage({
      locationUid: location(1),
      calls: [call],
      deadLetters: [],
      offset: offsetAt(call.updatedAt, [call.uid]),
    });

    const [record] = await readCommittedAtLeast(testKafka(), config.kafka.topic, 1);
    expect(record?.key?.toString()).toBe(call.uid);
    const value = record?.value ?? Buffer.alloc(0);
    expect(value.readUInt8(0)).toBe(0);
    const registry = new SchemaRegistry({ host: stackEndpoints().registryUrl });
    expect(value.readInt32BE(1)).toBe(await registry.getLatestSchemaId(`${config.kafka.topic}-value`));

    const decoded = (await registry.decode(value)) as Record<string, unknown>;
    expect(decoded).toMatchObject({
      uid: call.uid,
      locationUid: call.locationUid,
      updatedAt: isoToEpochMicros(call.updatedAt),
      updatedAtIso: call.updatedAt,
      locationPhoneNumber: call.locationPhoneNumber,
      customerPhoneNumber: null,
      startedAt: null,
      endedAt: null,
      isPrivate: null,
      conversationUid: null,
      enriched: false,
      customerPhoneNumberRedacted: true,
      connectorName: config.connector.name,
    });
    expect(decoded.updatedAt).toBe(Date.UTC(2024, 4, 1, 8, 0, 0) * 1000 + 123456);
  });
});
