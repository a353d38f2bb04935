/**
 * kafka.exactlyOnce: false against exactly-once mode: same records and offsets, no transactions, and
 * no fencing (two instances both write), which is what makes duplicates possible.
 */
import { describe, expect, it } from 'vitest';
import { ConnectorError } from '../../../../src/errors/index.js';
import { DLQ_HEADERS } from '../../../../src/kafka/records/dead-letter-message.js';
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
import { uniqueName } from '../../../support/stack.js';
import { rejectionOf } from '../../../support/rejection.js';

const { started } = useKafkaSessions();

const LOCATION = '00000000-0000-4000-8000-000000000001';

function page(cursor: string, locationUid = LOCATION): PageCommit {
  const calls = [sampleCall({ locationUid }), sampleCall({ locationUid })];
  return {
    locationUid,
    calls,
    deadLetters: [{ locationUid, code: 'ITEM_NO_UID', message: 'no uid', payload: '{}' }],
    offset: {
      since: null,
      cursor,
      watermark: calls[0]?.updatedAt ?? null,
      boundary: calls.map((c) => c.uid),
    },
  };
}

describe('AtLeastOnceRecordSink', () => {
  it('publishes the records, dead letters and offset of a page without any transaction', async () => {
    const kafka = testKafkaConfig({ exactlyOnce: false });
    const { session, metrics } = await started({ connectorName: uniqueName('alo'), kafka });
    const p = page('c1');

    await session.sink.commitPage(p);

    const client = testKafka();
    const calls = await readCommittedAtLeast(client, kafka.topic, 2);
    expect(calls.map((r) => r.key?.toString()).sort()).toEqual(p.calls.map((c) => c.uid).sort());
    const dlq = await readCommittedAtLeast(client, kafka.dlqTopic, 1);
    expect(dlq[0]?.headers?.[DLQ_HEADERS.code]?.toString()).toBe('ITEM_NO_UID');
    expect((await loadOffsetsWhen(session.offsetStore, (o) => o.has(LOCATION))).get(LOCATION)).toEqual(
      p.offset,
    );
    expect(await counterValue(metrics.transactions, { result: 'commit' })).toBe(0);
  });

  it('lets two instances of one connector both publish, where exactly-once mode fences the older one', async () => {
    const atLeastOnce = testKafkaConfig({ exactlyOnce: false });
    const aloName = uniqueName('alo-twins');
    const older = await started({ connectorName: aloName, kafka: atLeastOnce });
    const newer = await started({ connectorName: aloName, kafka: atLeastOnce });
    await newer.session.sink.commitPage(page('newer'));
    await older.session.sink.commitPage(page('older')); // no fencing: both pages land
    expect(await readCommittedAtLeast(testKafka(), atLeastOnce.topic, 4)).toHaveLength(4);

    const exactlyOnce = testKafkaConfig({ exactlyOnce: true });
    const eosName = uniqueName('eos-twins');
    const olderEos = await started({ connectorName: eosName, kafka: exactlyOnce });
    const newerEos = await started({ connectorName: eosName, kafka: exactlyOnce });
    await newerEos.session.sink.commitPage(page('newer'));
    const error = await rejectionOf(olderEos.session.sink.commitPage(page('older')));
    expect(error).toBeInstanceOf(ConnectorError);
    expect((error as ConnectorError).code).toBe('KAFKA_FENCED_BY_ANOTHER_INSTANCE');
    const records = await readCommittedAtLeast(testKafka(), exactlyOnce.topic, 2);
    expect(records).toHaveLength(2);
  });

  it("publishes the records and offsets of many locations' pages committed at once, grouped into shared requests", async () => {
    const kafka = testKafkaConfig({ exactlyOnce: false });
    const { session } = await started({ connectorName: uniqueName('alo-group'), kafka });
    const locations = Array.from(
      { length: 20 },
      (_, i) => `00000000-0000-4000-8000-${String(i + 1).padStart(12, '0')}`,
    );
    const pages = locations.map((l) => page(`c-${l}`, l));

    await Promise.all(pages.map((p) => session.sink.commitPage(p)));

    const calls = await readCommittedAtLeast(testKafka(), kafka.topic, 40);
    expect(calls.map((r) => r.key?.toString()).sort()).toEqual(
      pages.flatMap((p) => p.calls.map((c) => c.uid)).sort(),
    );
    const offsets = await loadOffsetsWhen(session.offsetStore, (o) => locations.every((l) => o.has(l)));
    for (const p of pages) expect(offsets.get(p.locationUid)).toEqual(p.offset);
  });
});
