/** The at-least-once sink's ordering and failures with a scripted producer. */
import type { ProducerBatch, ProducerRecord, RecordMetadata, TopicMessages } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { ConnectorError, FatalError } from '../../../../src/errors/index.js';
import type { CallEncoder } from '../../../../src/kafka/records/page-messages.js';
import {
  AtLeastOnceRecordSink,
  type IdempotentProducer,
} from '../../../../src/kafka/sinks/at-least-once-sink.js';
import { silentLogger } from '../../../../src/logging/logger.js';
import { testMetrics } from '../../../support/metrics.js';
import type { CommitOutcome, PageCommit } from '../../../../src/sync/ports.js';
import { sampleCall } from '../../../support/calls.js';
import { rejectionOf } from '../../../support/rejection.js';
import { ManualClock } from '../../../support/clock.js';
import { protocolError } from '../../../support/kafka-errors.js';

const encoder: CallEncoder = { encodeKey: (c) => c.uid, encodeValue: (c) => Buffer.from(c.uid) };
const LOCATION = '00000000-0000-4000-8000-000000000001';

/** Records, in order, the topics each send wrote to; `failOn` makes sends to that topic fail. */
class RecordingKafka {
  readonly writes: string[][] = [];
  /** The keys each send wrote, by topic (calls: uids; offsets: the offset keys, which end in the location). */
  readonly keys: Record<string, string[]>[] = [];
  /** Which producer (1 = the first built) made each entry of `writes`. */
  readonly writers: number[] = [];
  producersBuilt = 0;
  readonly disconnected: number[] = [];
  failOn: { topic: string; error: Error } | undefined;
  /** Awaited by every write before it is recorded. */
  beforeWrite: (topics: string[]) => Promise<void> = async () => undefined;

  producer(): IdempotentProducer {
    const id = ++this.producersBuilt;
    const write = async (batch: TopicMessages[]): Promise<RecordMetadata[]> => {
      const topics = batch.map((t) => t.topic);
      await this.beforeWrite(topics);
      if (this.failOn !== undefined && topics.includes(this.failOn.topic)) throw this.failOn.error;
      this.writes.push(topics);
      this.keys.push(Object.fromEntries(batch.map((t) => [t.topic, t.messages.map((m) => String(m.key))])));
      this.writers.push(id);
      return [];
    };
    return {
      connect: async () => undefined,
      disconnect: async () => void this.disconnected.push(id),
      send: (record: ProducerRecord) => write([{ topic: record.topic, messages: record.messages }]),
      sendBatch: (batch: ProducerBatch) => write(batch.topicMessages ?? []),
    };
  }

  /** Index of the first write holding `key` in `topic` (-1: never written). */
  firstWrite(topic: string, key: string): number {
    return this.keys.findIndex((k) => (k[topic] ?? []).includes(key));
  }
}

/** A write that waits until the test lets it through. */
class Gate {
  private opened: (() => void)[] = [];
  waiting = 0;

  wait(): Promise<void> {
    this.waiting += 1;
    return new Promise<void>((resolve) => this.opened.push(resolve));
  }

  open(): void {
    this.waiting = 0;
    for (const resolve of this.opened.splice(0)) resolve();
  }
}

function page(locationUid = LOCATION): PageCommit {
  return {
    locationUid,
    calls: [sampleCall({ locationUid })],
    deadLetters: [{ locationUid, code: 'ITEM_NO_UID', message: 'no uid', payload: '{}' }],
    offset: { since: null, cursor: 'c', watermark: null, boundary: [] },
  };
}

function location(n: number): string {
  return `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
}

/** The offset key of a location, as the offsets topic holds it. */
function offsetKeyOf(kafka: RecordingKafka, locationUid: string): string {
  const key = kafka.keys.flatMap((k) => k['offsets'] ?? []).find((k) => k.endsWith(locationUid));
  if (key === undefined) throw new Error(`no offset written for ${locationUid}`);
  return key;
}

/** Lets the event loop run until `condition` holds (bounded by turns, not time). */
async function until(condition: () => boolean): Promise<void> {
  for (let turn = 0; turn < 100 && !condition(); turn++) await new Promise(setImmediate);
  expect(condition()).toBe(true);
}

async function started(
  kafka: RecordingKafka,
  clock?: ManualClock,
  onFatal?: (error: FatalError) => void,
): Promise<AtLeastOnceRecordSink> {
  const sink = new AtLeastOnceRecordSink({
    ...(clock === undefined ? {} : { clock }),
    ...(onFatal === undefined ? {} : { onFatal }),
    kafka,
    encoder,
    topics: { calls: 'calls', offsets: 'offsets', deadLetters: 'dlq' },
    connectorName: 'conn',
    metrics: testMetrics(),
    logger: silentLogger(),
  });
  await sink.start();
  return sink;
}

/** The reason of a 'rejected' outcome (the promise resolves: the page is to be committed again). */
async function rejectedReason(promise: Promise<CommitOutcome>): Promise<ConnectorError> {
  const result = await promise;
  if (result.kind !== 'rejected') throw new Error(`expected a rejected outcome, got ${result.kind}`);
  return result.reason;
}

describe('AtLeastOnceRecordSink (scripted producer)', () => {
  it('writes the offset only after the calls and dead letters were acknowledged', async () => {
    const kafka = new RecordingKafka();
    const sink = await started(kafka);
    await sink.commitPage(page());
    expect(kafka.writes).toEqual([['calls', 'dlq'], ['offsets']]);
  });

  it('does not write the offset when the records fail, and answers the page rejected with a retriable reason', async () => {
    const kafka = new RecordingKafka();
    const sink = await started(kafka);
    kafka.failOn = { topic: 'calls', error: protocolError('NOT_LEADER_FOR_PARTITION') };

    const error = await rejectedReason(sink.commitPage(page()));
    expect(error.code).toBe('KAFKA_SEND_FAILED');
    expect(error.disposition).toBe('retriable');
    expect(kafka.writes).toEqual([]);
  });

  it('sends the pages after a failed send through a new producer, whose sequence numbers start afresh', async () => {
    // kafkajs rolls its sequence numbers back when a produce request fails, even one the broker wrote: the
    // next batch on that producer would then be refused (OUT_OF_ORDER_SEQUENCE_NUMBER) or, with as many
    // records, acknowledged as a duplicate without being written.
    const kafka = new RecordingKafka();
    const sink = await started(kafka);
    kafka.failOn = { topic: 'calls', error: protocolError('REQUEST_TIMED_OUT') };
    await rejectedReason(sink.commitPage(page()));
    kafka.failOn = undefined;

    await sink.commitPage(page());
    expect(kafka.writers).toEqual([2, 2]);
    expect(kafka.disconnected).toEqual([1]);
  });

  it('stops the process on a programmer error instead of retrying it as a failed send', async () => {
    const kafka = new RecordingKafka();
    const fatal: FatalError[] = [];
    const sink = await started(kafka, undefined, (e) => fatal.push(e));
    const bug = new TypeError('Cannot read properties of undefined');
    kafka.failOn = { topic: 'calls', error: bug };
    const error = await rejectionOf(sink.commitPage(page()));
    expect(error).toMatchObject({ code: 'SINK_PROGRAMMER_ERROR', cause: bug });
    expect(fatal).toEqual([error]);
  });

  it('rejects with a fatal error when Kafka refuses the write for authorization', async () => {
    const kafka = new RecordingKafka();
    const sink = await started(kafka);
    kafka.failOn = { topic: 'offsets', error: protocolError('TOPIC_AUTHORIZATION_FAILED') };

    const error = await rejectionOf(sink.commitPage(page()));
    expect(error).toBeInstanceOf(FatalError);
    expect((error as FatalError).code).toBe('KAFKA_NOT_PERMITTED');
  });

  it('refuses pages once closed', async () => {
    const sink = await started(new RecordingKafka());
    await sink.close();
    expect(((await rejectionOf(sink.commitPage(page()))) as ConnectorError).code).toBe('KAFKA_SINK_CLOSED');
  });

  it('closes within its timeout on its clock while a send hangs, disconnecting the producer', async () => {
    const kafka = new RecordingKafka();
    const clock = new ManualClock();
    const sink = await started(kafka, clock);
    kafka.beforeWrite = () => new Promise<void>(() => undefined); // never answers
    void sink.commitPage(page()).catch(() => undefined);

    const closed = sink.close(2_000);
    await clock.sleeping();
    clock.advance(2_000);
    await closed;
    expect(kafka.disconnected).toEqual([1]);
  });

  it('sends the pages queued while a request is in flight in one request, with the offsets of the pages acknowledged before', async () => {
    const kafka = new RecordingKafka();
    const sink = await started(kafka);
    const gate = new Gate();
    kafka.beforeWrite = () => gate.wait();
    const first = sink.commitPage(page(location(1)));
    await until(() => gate.waiting === 1);
    const queued = [2, 3, 4].map((n) => sink.commitPage(page(location(n))));
    gate.open();
    await until(() => gate.waiting === 1);
    gate.open();
    await first; // its offset rode with the queued pages' records
    await until(() => gate.waiting === 1);
    gate.open();
    await Promise.all(queued);

    expect(kafka.writes).toEqual([['calls', 'dlq'], ['calls', 'dlq', 'offsets'], ['offsets']]);
    expect(kafka.keys[1]?.['calls']).toHaveLength(3);
    expect(kafka.keys[1]?.['offsets']).toEqual([offsetKeyOf(kafka, location(1))]);
    expect(kafka.keys[2]?.['offsets']).toEqual([2, 3, 4].map((n) => offsetKeyOf(kafka, location(n))));
  });

  it("never writes a page's offset before or with its records, however the pages interleave", async () => {
    const kafka = new RecordingKafka();
    const sink = await started(kafka);
    const pages = Array.from({ length: 30 }, (_, i) => page(location(i + 1)));
    const committed: Promise<CommitOutcome>[] = [];
    for (const [i, p] of pages.entries()) {
      committed.push(sink.commitPage(p));
      if (i % 7 === 0) await new Promise(setImmediate); // some pages go alone, others in groups
    }
    await Promise.all(committed);

    expect(kafka.writes.length).toBeLessThan(pages.length * 2);
    for (const p of pages) {
      const records = kafka.firstWrite('calls', p.calls[0]?.uid ?? '');
      const offset = kafka.firstWrite('offsets', offsetKeyOf(kafka, p.locationUid));
      expect(records).toBeGreaterThanOrEqual(0);
      expect(offset).toBeGreaterThan(records);
    }
  });

  it('writes the offset of a page without records in the next request, as it has no records to wait for', async () => {
    const kafka = new RecordingKafka();
    const sink = await started(kafka);
    await sink.commitPage({ ...page(), calls: [], deadLetters: [] });
    expect(kafka.writes).toEqual([['offsets']]);
  });

  it('answers rejected for a page whose records were acknowledged but whose offset failed, and its retry publishes them again: duplicates, never loss', async () => {
    const kafka = new RecordingKafka();
    const sink = await started(kafka);
    kafka.failOn = { topic: 'offsets', error: protocolError('REQUEST_TIMED_OUT') };
    const p = page();
    const error = await rejectedReason(sink.commitPage(p));
    expect(error.code).toBe('KAFKA_SEND_FAILED');
    expect(kafka.writes).toEqual([['calls', 'dlq']]); // published, offset left behind

    kafka.failOn = undefined;
    await sink.commitPage(p);
    const uid = p.calls[0]?.uid ?? '';
    expect(kafka.keys.filter((k) => (k['calls'] ?? []).includes(uid))).toHaveLength(2);
    expect(kafka.writes.at(-1)).toEqual(['offsets']);
  });

  it('rejects a page whose offset was not written when a close times out, leaving its offset behind', async () => {
    // A crash between the records and the offset: the stored offset still points before the page, so a
    // restart publishes it again.
    const kafka = new RecordingKafka();
    const clock = new ManualClock();
    const sink = await started(kafka, clock);
    kafka.beforeWrite = (topics) =>
      topics.includes('offsets') ? new Promise<void>(() => undefined) : Promise.resolve();
    const committed = sink.commitPage(page());
    await until(() => kafka.writes.length === 1);

    const closed = sink.close(2_000);
    await clock.sleeping();
    clock.advance(2_000);
    await closed;
    expect(((await rejectionOf(committed)) as ConnectorError).code).toBe('KAFKA_SINK_CLOSED');
    expect(kafka.writes).toEqual([['calls', 'dlq']]);
  });
});
