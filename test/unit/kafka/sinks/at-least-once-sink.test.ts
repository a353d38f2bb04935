/** The at-least-once sink's ordering and failures with a scripted producer. */
import type { ProducerBatch, ProducerRecord, RecordMetadata } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { ConnectorError, FatalError } from '../../../../src/errors/index.js';
import type { CallEncoder } from '../../../../src/kafka/page-messages.js';
import {
  AtLeastOnceRecordSink,
  type IdempotentProducer,
} from '../../../../src/kafka/sinks/at-least-once-sink.js';
import { silentLogger } from '../../../../src/logging/logger.js';
import { ConnectorMetrics } from '../../../../src/metrics/metrics.js';
import type { PageCommit } from '../../../../src/sync/ports.js';
import { sampleCall } from '../../../support/calls.js';
import { rejectionOf } from '../../../support/rejection.js';
import { ManualClock } from '../../../support/clock.js';

const encoder: CallEncoder = { encodeKey: (c) => c.uid, encodeValue: (c) => Buffer.from(c.uid) };
const LOCATION = '00000000-0000-4000-8000-000000000001';

function protocolError(type: string): Error {
  return Object.assign(new Error(`broker said ${type}`), { type });
}

/** Records, in order, the topics each send wrote to; `failOn` makes sends to that topic fail. */
class RecordingKafka {
  readonly writes: string[][] = [];
  /** Which producer (1 = the first built) made each entry of `writes`. */
  readonly writers: number[] = [];
  producersBuilt = 0;
  readonly disconnected: number[] = [];
  failOn: { topic: string; error: Error } | undefined;
  /** Awaited by every write before it is recorded. */
  beforeWrite: () => Promise<void> = async () => undefined;

  producer(): IdempotentProducer {
    const id = ++this.producersBuilt;
    const write = async (topics: string[]): Promise<RecordMetadata[]> => {
      await this.beforeWrite();
      if (this.failOn !== undefined && topics.includes(this.failOn.topic)) throw this.failOn.error;
      this.writes.push(topics);
      this.writers.push(id);
      return [];
    };
    return {
      connect: async () => undefined,
      disconnect: async () => void this.disconnected.push(id),
      send: (record: ProducerRecord) => write([record.topic]),
      sendBatch: (batch: ProducerBatch) => write((batch.topicMessages ?? []).map((t) => t.topic)),
    };
  }
}

function page(): PageCommit {
  return {
    locationUid: LOCATION,
    calls: [sampleCall({ locationUid: LOCATION })],
    deadLetters: [{ locationUid: LOCATION, code: 'ITEM_NO_UID', message: 'no uid', payload: '{}' }],
    offset: { since: null, cursor: 'c', watermark: null, boundary: [] },
  };
}

async function started(kafka: RecordingKafka, clock?: ManualClock): Promise<AtLeastOnceRecordSink> {
  const sink = new AtLeastOnceRecordSink({
    ...(clock === undefined ? {} : { clock }),
    kafka,
    encoder,
    topics: { calls: 'calls', offsets: 'offsets', deadLetters: 'dlq' },
    connectorName: 'conn',
    metrics: new ConnectorMetrics(),
    logger: silentLogger(),
  });
  await sink.start();
  return sink;
}

describe('AtLeastOnceRecordSink (scripted producer)', () => {
  it('writes the offset only after the calls and dead letters were acknowledged', async () => {
    const kafka = new RecordingKafka();
    const sink = await started(kafka);
    await sink.commitPage(page());
    expect(kafka.writes).toEqual([['calls', 'dlq'], ['offsets']]);
  });

  it('does not write the offset when the records fail, and rejects the page as retriable', async () => {
    const kafka = new RecordingKafka();
    const sink = await started(kafka);
    kafka.failOn = { topic: 'calls', error: protocolError('NOT_LEADER_FOR_PARTITION') };

    const error = (await rejectionOf(sink.commitPage(page()))) as ConnectorError;
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
    await rejectionOf(sink.commitPage(page()));
    kafka.failOn = undefined;

    await sink.commitPage(page());
    expect(kafka.writers).toEqual([2, 2]);
    expect(kafka.disconnected).toEqual([1]);
  });

  it('passes a programmer error on as it is instead of retrying it as a failed send', async () => {
    const kafka = new RecordingKafka();
    const sink = await started(kafka);
    const bug = new TypeError('Cannot read properties of undefined');
    kafka.failOn = { topic: 'calls', error: bug };
    expect(await rejectionOf(sink.commitPage(page()))).toBe(bug);
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
});
