import { describe, expect, it } from 'vitest';
import { SkippableError } from '../../../../src/errors/index.js';
import { CONNECT_ERROR_HEADERS, DLQ_HEADERS } from '../../../../src/kafka/records/dead-letter-message.js';
import {
  chunkTopicMessages,
  offsetOnly,
  pageMessages,
  topicMessages,
  type CallEncoder,
} from '../../../../src/kafka/records/page-messages.js';
import { SOURCE_HEADERS } from '../../../../src/kafka/records/source-headers.js';
import type { Call } from '../../../../src/sync/model.js';
import { sampleCall } from '../../../support/calls.js';

const LOCATION = '00000000-0000-4000-8000-000000000001';

function call(uid: string): Call {
  return sampleCall({ uid, locationUid: LOCATION, customerPhoneNumber: '+15550199' });
}

/** Encodes a call as its uid, except uids starting with "bad", which the "schema" rejects. */
const encoder: CallEncoder = {
  encodeKey: (c) => c.uid,
  encodeValue: (c) => {
    if (c.uid.startsWith('bad')) throw new SkippableError('ITEM_SCHEMA_REJECTED', `call ${c.uid} rejected`);
    return Buffer.from(c.uid);
  },
};

const offset = { since: null, cursor: 'next', watermark: '2024-05-01T10:00:00Z', boundary: ['ok-1'] };

describe('pageMessages', () => {
  it('routes a call the schema rejects to the dead letters, without its customer number, and keeps the rest of the page', () => {
    const page = pageMessages(
      { locationUid: LOCATION, calls: [call('ok-1'), call('bad-2'), call('ok-3')], deadLetters: [], offset },
      encoder,
      'conn',
      new Date('2024-05-01T12:00:00Z'),
    );
    expect(page.calls.map((m) => m.key)).toEqual(['ok-1', 'ok-3']);
    expect(page.divertedCodes).toEqual(['ITEM_SCHEMA_REJECTED']);
    expect(page.deadLetters).toHaveLength(1);
    const [dead] = page.deadLetters;
    expect(dead?.headers?.[DLQ_HEADERS.code]).toBe('ITEM_SCHEMA_REJECTED');
    expect(dead?.headers?.[DLQ_HEADERS.failedAt]).toBe('2024-05-01T12:00:00.000Z');
    expect(JSON.parse(String(dead?.value))).not.toHaveProperty('customerPhoneNumber');
    expect(page.offset).toEqual({
      key: `conn/${LOCATION}`,
      value: JSON.stringify({ version: 2, ...offset }),
    });
  });

  it('gives every call record the source metadata headers: connector, location, traversal, page and request position', () => {
    const source = { traversalId: 'trav-1', page: 3, since: '2024-05-01T00:00:00Z', cursor: 'c-3' };
    const page = pageMessages(
      { locationUid: LOCATION, calls: [call('ok-1'), call('ok-2')], deadLetters: [], offset, source },
      encoder,
      'conn',
      new Date('2024-05-01T12:00:00Z'),
    );
    for (const message of page.calls) {
      expect(message.headers).toEqual({
        [SOURCE_HEADERS.connector]: 'conn',
        [SOURCE_HEADERS.location]: LOCATION,
        [SOURCE_HEADERS.traversal]: 'trav-1',
        [SOURCE_HEADERS.page]: '3',
        [SOURCE_HEADERS.since]: '2024-05-01T00:00:00Z',
        [SOURCE_HEADERS.cursor]: 'c-3',
      });
    }
    const first = pageMessages(
      {
        locationUid: LOCATION,
        calls: [call('ok-1')],
        deadLetters: [],
        offset,
        source: { ...source, page: 1, since: null, cursor: null },
      },
      encoder,
      'conn',
      new Date(),
    );
    expect(Object.keys(first.calls[0]?.headers ?? {})).not.toContain(SOURCE_HEADERS.cursor);
    expect(Object.keys(first.calls[0]?.headers ?? {})).not.toContain(SOURCE_HEADERS.since);
  });

  it('names the backfill signal on the records a backfill re-read', () => {
    const source = { traversalId: 't', page: 1, since: null, cursor: null, signal: 'sig-1' };
    const page = pageMessages(
      { locationUid: LOCATION, calls: [call('ok-1')], deadLetters: [], offset, source },
      encoder,
      'conn',
      new Date(),
    );
    expect(page.calls[0]?.headers?.[SOURCE_HEADERS.signal]).toBe('sig-1');
  });

  it('adds the done outcome of the signal a page completes, sent with the offsets only', () => {
    const done = (location: string, signalId: string, now: Date) => ({
      key: `outcome/${signalId}`,
      value: `${location} ${now.toISOString()}`,
      partition: 2,
    });
    const topics = { calls: 'calls', offsets: 'offsets', deadLetters: 'dlq', signals: 'signals' };
    const page = pageMessages(
      { locationUid: LOCATION, calls: [call('ok-1')], deadLetters: [], offset, signalDone: 'sig-1' },
      encoder,
      'conn',
      new Date('2024-05-01T12:00:00Z'),
      done,
    );
    expect(page.signalDone).toEqual({
      key: 'outcome/sig-1',
      value: `${LOCATION} 2024-05-01T12:00:00.000Z`,
      partition: 2,
    });
    expect(topicMessages([page], topics).map((t) => [t.topic, t.messages.length])).toEqual([
      ['calls', 1],
      ['offsets', 1],
      ['signals', 1],
    ]);
    expect(topicMessages([page], topics, { offsets: false }).map((t) => t.topic)).toEqual(['calls']);
    expect(offsetOnly(page).signalDone).toEqual(page.signalDone);
    // Without a builder (at least once) the page carries none: the runtime writes the outcome once it is stored.
    const unwritten = pageMessages(
      { locationUid: LOCATION, calls: [], deadLetters: [], offset, signalDone: 'sig-1' },
      encoder,
      'conn',
      new Date(),
    );
    expect(unwritten.signalDone).toBeUndefined();
  });

  it("writes a tombstone (key uid, null value) for each gone call, after the page's records", () => {
    const page = pageMessages(
      { locationUid: LOCATION, calls: [call('ok-1')], deadLetters: [], offset, tombstones: ['gone-1'] },
      encoder,
      'conn',
      new Date(),
    );
    expect(page.calls.map((m) => [m.key, m.value === null ? null : String(m.value)])).toEqual([
      ['ok-1', 'ok-1'],
      ['gone-1', null],
    ]);
  });

  it('keeps only the identifying fields of an oversized call in its dead letter', () => {
    const tooLarge: CallEncoder = {
      ...encoder,
      encodeValue: (c) => {
        throw new SkippableError('ITEM_TOO_LARGE', `call ${c.uid} is too large`);
      },
    };
    const big = { ...call('huge'), locationPhoneNumber: 'x'.repeat(10_000) };
    const page = pageMessages(
      { locationUid: LOCATION, calls: [big], deadLetters: [], offset },
      tooLarge,
      'conn',
      new Date(),
    );
    expect(JSON.parse(String(page.deadLetters[0]?.value))).toEqual({
      uid: 'huge',
      locationUid: LOCATION,
      updatedAt: big.updatedAt,
    });
  });

  it('keys dead letters by call uid when known and gives them Kafka Connect error headers', () => {
    const page = pageMessages(
      {
        locationUid: LOCATION,
        calls: [call('bad-1')],
        deadLetters: [
          {
            locationUid: LOCATION,
            uid: 'c9',
            code: 'ITEM_BAD_UPDATED_AT',
            message: 'no date',
            payload: '{}',
          },
          { locationUid: LOCATION, code: 'ITEM_NO_UID', message: 'no uid', payload: '{}' },
        ],
        offset,
      },
      encoder,
      'conn',
      new Date(),
    );
    expect(page.deadLetters.map((m) => m.key)).toEqual(['c9', LOCATION, 'bad-1']);
    const [polled, , converted] = page.deadLetters;
    expect(polled?.headers).toMatchObject({
      [CONNECT_ERROR_HEADERS.connectorName]: 'conn',
      [CONNECT_ERROR_HEADERS.stage]: 'TASK_POLL',
      [CONNECT_ERROR_HEADERS.exceptionClass]: 'SkippableError',
      [CONNECT_ERROR_HEADERS.exceptionMessage]: 'ITEM_BAD_UPDATED_AT: no date',
      [DLQ_HEADERS.uid]: 'c9',
    });
    expect(converted?.headers?.[CONNECT_ERROR_HEADERS.stage]).toBe('VALUE_CONVERTER');
    const [dlq] = topicMessages([page], { calls: 'calls', offsets: 'offsets', deadLetters: 'dlq' }).filter(
      (t) => t.topic === 'dlq',
    );
    expect(dlq?.messages.map((m) => m.headers?.[CONNECT_ERROR_HEADERS.topic])).toEqual([
      'calls',
      'calls',
      'calls',
    ]);
  });

  it('bounds every dead letter (key, headers, value) however large its parts were', () => {
    const huge = 'x'.repeat(2_000_000);
    const page = pageMessages(
      {
        locationUid: LOCATION,
        calls: [],
        deadLetters: [
          { locationUid: LOCATION, uid: huge, code: 'ITEM_SCHEMA_REJECTED', message: huge, payload: huge },
        ],
        offset,
      },
      encoder,
      'conn',
      new Date(),
    );
    expect(page.bytes).toBeLessThan(100_000);
  });

  it('lets errors that are not skippable through (programmer errors are never dead letters)', () => {
    const broken: CallEncoder = {
      ...encoder,
      encodeValue: () => {
        throw new TypeError('bug');
      },
    };
    expect(() =>
      pageMessages(
        { locationUid: LOCATION, calls: [call('x')], deadLetters: [], offset },
        broken,
        'conn',
        new Date(),
      ),
    ).toThrow(TypeError);
  });
});

describe('topicMessages', () => {
  it('groups pages by topic in arrival order and leaves out empty topics and, on request, offsets', () => {
    const topics = { calls: 'calls', offsets: 'offsets', deadLetters: 'dlq' };
    const first = pageMessages(
      { locationUid: LOCATION, calls: [call('a')], deadLetters: [], offset },
      encoder,
      'conn',
      new Date(),
    );
    const second = pageMessages(
      { locationUid: LOCATION, calls: [call('b')], deadLetters: [], offset: { ...offset, cursor: 'later' } },
      encoder,
      'conn',
      new Date(),
    );
    const grouped = topicMessages([first, second], topics);
    expect(grouped.map((t) => t.topic)).toEqual(['calls', 'offsets']);
    expect(grouped[0]?.messages.map((m) => m.key)).toEqual(['a', 'b']);
    expect(String(grouped[1]?.messages[1]?.value)).toContain('later');
    expect(topicMessages([first], topics, { offsets: false }).map((t) => t.topic)).toEqual(['calls']);
  });
});

describe('chunkTopicMessages', () => {
  const message = (key: string, bytes: number) => ({ key, value: Buffer.alloc(bytes) });
  const keys = (chunks: ReturnType<typeof chunkTopicMessages>) =>
    chunks.map((chunk) => chunk.map((t) => `${t.topic}:${t.messages.map((m) => String(m.key)).join(',')}`));

  it('splits a page larger than the budget into sends under it, every topic in order', () => {
    const chunks = chunkTopicMessages(
      [
        { topic: 'calls', messages: [message('a', 400), message('b', 400), message('c', 400)] },
        { topic: 'offsets', messages: [message('o', 10)] },
      ],
      1000,
    );
    expect(keys(chunks)).toEqual([['calls:a,b'], ['calls:c', 'offsets:o']]);
  });

  it('keeps everything in one send when it fits, and sends a message over the budget alone', () => {
    expect(
      keys(chunkTopicMessages([{ topic: 'calls', messages: [message('a', 10), message('b', 10)] }], 1000)),
    ).toEqual([['calls:a,b']]);
    expect(
      keys(
        chunkTopicMessages(
          [{ topic: 'calls', messages: [message('a', 10), message('big', 5000), message('c', 10)] }],
          1000,
        ),
      ),
    ).toEqual([['calls:a'], ['calls:big'], ['calls:c']]);
    expect(chunkTopicMessages([], 1000)).toEqual([]);
  });
});
