/**
 * Turns one PageCommit into Kafka messages for the three topics, shared by both sinks. Call records carry
 * the page's source metadata as headers (source-headers.ts).
 *
 * A call the codec rejects (the mapper upstream should have prevented it) does not poison the page: it
 * becomes a dead letter (ITEM_SCHEMA_REJECTED, or ITEM_TOO_LARGE with only its identifying fields as
 * payload) and the rest of the page goes on.
 */
import type { Message, TopicMessages } from 'kafkajs';
import { ConnectorError } from '../../errors/index.js';
import type { ConnectorMetrics } from '../../metrics/metrics.js';
import type { Call, DeadLetter } from '../../sync/model.js';
import type { PageCommit } from '../../sync/ports.js';
import { deadLetterMessage, withOriginalTopic } from './dead-letter-message.js';
import { encodeOffsetValue, offsetKey } from '../offsets/offset-codec.js';
import { sourceHeaders } from './source-headers.js';
/** Records diverted from the calls topic: dead letters and skipped records, per location. */
export type DivertedMetrics = Pick<ConnectorMetrics, 'deadLetters' | 'location' | 'recordsSkipped'>;

/** What the sinks need of the Avro codec (CallCodec); a seam for tests. */
export interface CallEncoder {
  encodeKey(call: Pick<Call, 'uid'>): string | Buffer;
  /** Throws a SkippableError (ITEM_SCHEMA_REJECTED, ITEM_TOO_LARGE) for a call it cannot encode. */
  encodeValue(call: Call): Buffer;
}

export interface SinkTopics {
  calls: string;
  offsets: string;
  deadLetters: string;
  /** The signals topic, where a page that completes a signal writes its `done` outcome (PageCommit.signalDone). */
  signals?: string;
}

/**
 * Builds the `done` outcome record of a signal a page completes (kafka/signals/signal-topic.ts outcomeMessage:
 * the partition of the location's signals), written in the page's transaction. The exactly-once sink has one;
 * the at-least-once sink has none (its offset and an outcome could not be written together): the runtime writes
 * the outcome once the page is stored (sync/ports.ts LocationSignals.settled).
 */
export type SignalDoneMessage = (
  locationUid: string,
  signalId: string,
  now: Date,
) => Message & { partition: number };

export interface PageMessages {
  locationUid: string;
  calls: Message[];
  deadLetters: Message[];
  /**
   * Codes of the dead letters the sink itself made of calls the schema rejected. The sync engine counts
   * the page's own dead letters and published calls; the sink counts only these (see countDiverted).
   */
  divertedCodes: string[];
  offset: Message;
  /** The `done` outcome of the signal the page completes, written with the offset (SignalDoneMessage). */
  signalDone?: Message & { partition: number };
  /** Approximate size on the wire (keys, values, headers), for bounding a transaction. */
  bytes: number;
}

export function pageMessages(
  commit: PageCommit,
  encoder: CallEncoder,
  connectorName: string,
  now: Date,
  signalDone?: SignalDoneMessage,
): PageMessages {
  const calls: Message[] = [];
  const deadLetters: DeadLetter[] = [...commit.deadLetters];
  const headers = sourceHeaders(connectorName, commit.locationUid, commit.source);
  const ownDeadLetters = deadLetters.length;
  for (const call of commit.calls) {
    try {
      calls.push({ key: encoder.encodeKey(call), value: encoder.encodeValue(call), headers });
    } catch (error) {
      if (!(error instanceof ConnectorError) || error.disposition !== 'skippable') throw error;
      deadLetters.push(rejectedCall(call, error));
    }
  }
  // Tombstones after the page's records: a call listed and then found gone ends deleted.
  for (const uid of commit.tombstones ?? [])
    calls.push({ key: encoder.encodeKey({ uid }), value: null, headers });
  const dlqMessages = deadLetters.map((d, i) =>
    deadLetterMessage(d, connectorName, now, i < ownDeadLetters ? 'TASK_POLL' : 'VALUE_CONVERTER'),
  );
  const offset = {
    key: offsetKey(connectorName, commit.locationUid),
    value: encodeOffsetValue(commit.offset),
  };
  const outcome = doneMessage(commit, now, signalDone);
  return {
    locationUid: commit.locationUid,
    calls,
    deadLetters: dlqMessages,
    divertedCodes: deadLetters.slice(commit.deadLetters.length).map((d) => d.code),
    offset,
    ...(outcome !== undefined && { signalDone: outcome }),
    bytes: [...calls, ...dlqMessages, offset, ...(outcome === undefined ? [] : [outcome])].reduce(
      (sum, m) => sum + messageBytes(m),
      0,
    ),
  };
}

function doneMessage(
  commit: PageCommit,
  now: Date,
  build: SignalDoneMessage | undefined,
): (Message & { partition: number }) | undefined {
  if (commit.signalDone === undefined || build === undefined) return undefined;
  return build(commit.locationUid, commit.signalDone, now);
}

/** The page's completion records: its offset and, when it completes a signal, the signal's outcome. */
function completion(page: PageMessages): Message[] {
  return page.signalDone === undefined ? [page.offset] : [page.offset, page.signalDone];
}

/**
 * The page's offset record alone, with no calls or dead letters: what the exactly-once sink writes again when
 * the page's transaction committed but its offset record was lost (sync/location/commit-outcome.ts, 'rewrite-offset').
 */
export function offsetOnly(page: PageMessages): PageMessages {
  const bytes = completion(page).reduce((sum, m) => sum + messageBytes(m), 0);
  return { ...page, calls: [], deadLetters: [], divertedCodes: [], bytes };
}

/**
 * The page with only the calls and dead letters `keep` names (by topic and key), and its offset record: what the
 * exactly-once sink publishes again of a committed page when some partitions' part of it was aborted since
 * ('republish-lost').
 */
export function partOf(
  page: PageMessages,
  topics: SinkTopics,
  keep: (topic: string, key: Message['key']) => boolean,
): PageMessages {
  const calls = page.calls.filter((m) => keep(topics.calls, m.key));
  const deadLetters = page.deadLetters.filter((m) => keep(topics.deadLetters, m.key));
  return {
    ...page,
    calls,
    deadLetters,
    divertedCodes: [],
    bytes: [...calls, ...deadLetters, ...completion(page)].reduce((sum, m) => sum + messageBytes(m), 0),
  };
}

function messageBytes(message: Message): number {
  const size = (v: Buffer | string | null | undefined): number =>
    v === null || v === undefined ? 0 : typeof v === 'string' ? Buffer.byteLength(v) : v.length;
  let headers = 0;
  for (const [name, value] of Object.entries(message.headers ?? {})) {
    headers +=
      Buffer.byteLength(name) +
      (Array.isArray(value) ? value.reduce<number>((n, v) => n + size(v), 0) : size(value));
  }
  return size(message.key) + size(message.value) + headers;
}

/** Payloads of dead letters made of oversized calls keep only what identifies the call. */
const IDENTIFYING_FIELDS_ONLY = new Set(['ITEM_TOO_LARGE']);

function rejectedCall(call: Call, error: ConnectorError): DeadLetter {
  const { customerPhoneNumber: _removed, ...withoutCustomerNumber } = call;
  const payload = IDENTIFYING_FIELDS_ONLY.has(error.code)
    ? { uid: call.uid, locationUid: call.locationUid, updatedAt: call.updatedAt }
    : withoutCustomerNumber;
  return {
    locationUid: call.locationUid,
    uid: call.uid,
    code: error.code,
    message: error.message,
    payload: JSON.stringify(payload),
  };
}

/**
 * Groups the messages of several pages by topic, pages in arrival order (so a later offset wins). The signal
 * outcomes pages complete go with the offsets (one transaction: exactly-once mode writes them).
 */
export function topicMessages(
  pages: readonly PageMessages[],
  topics: SinkTopics,
  include = { offsets: true },
): TopicMessages[] {
  const outcomes = pages.flatMap((p) => (p.signalDone === undefined ? [] : [p.signalDone]));
  if (outcomes.length > 0 && topics.signals === undefined)
    throw new Error('pages complete signals, but the sink has no signals topic');
  const byTopic: TopicMessages[] = [
    { topic: topics.calls, messages: pages.flatMap((p) => p.calls) },
    {
      topic: topics.deadLetters,
      messages: pages.flatMap((p) => p.deadLetters.map((m) => withOriginalTopic(m, topics.calls))),
    },
    ...(include.offsets ? [{ topic: topics.offsets, messages: pages.map((p) => p.offset) }] : []),
    ...(include.offsets && topics.signals !== undefined
      ? [{ topic: topics.signals, messages: outcomes }]
      : []),
  ];
  return byTopic.filter((t) => t.messages.length > 0);
}

/** A record's framing in a batch (varints, attributes, timestamp and offset deltas, header counts), rounded up. */
const RECORD_FRAMING_BYTES = 64;

/**
 * Splits what one transaction sends into consecutive sendBatch calls of at most `maxBytes` each (by
 * messageBytes), keeping every topic's messages in order. kafkajs puts all the messages of one call for one
 * partition into one record batch, and the broker refuses a batch over the topic's max.message.bytes
 * (MESSAGE_TOO_LARGE) whatever its records' own sizes: one page of large (but each acceptable) calls would
 * otherwise be refused and retried for ever. The calls all belong to one transaction, so splitting changes
 * nothing a read_committed consumer sees. A message larger than `maxBytes` travels alone (the codec has
 * already diverted calls too large for the topic).
 */
export function chunkTopicMessages(
  topicMessages: readonly TopicMessages[],
  maxBytes: number,
): TopicMessages[][] {
  const chunks: TopicMessages[][] = [];
  let chunk: TopicMessages[] = [];
  let bytes = 0;
  for (const { topic, messages } of topicMessages) {
    let current: TopicMessages | undefined;
    for (const message of messages) {
      const size = messageBytes(message) + RECORD_FRAMING_BYTES;
      if (bytes > 0 && bytes + size > maxBytes) {
        chunks.push(chunk);
        chunk = [];
        bytes = 0;
        current = undefined;
      }
      if (current === undefined) {
        current = { topic, messages: [] };
        chunk.push(current);
      }
      current.messages.push(message);
      bytes += size;
    }
  }
  if (chunk.length > 0) chunks.push(chunk);
  return chunks;
}

/**
 * Counts, once their transaction committed, the calls the sink diverted to the dead-letter topic:
 * deadLetters{code} and recordsSkipped{reason=dlq}. Everything else about a page (recordsPublished, its
 * own dead letters) is counted by the sync engine when commitPage resolves; a diverted call is therefore
 * also in its recordsPublished (rare: the mapper upstream validates what the schema needs).
 */
export function countDiverted(metrics: DivertedMetrics, pages: readonly PageMessages[]): void {
  for (const page of pages) {
    if (page.divertedCodes.length === 0) continue;
    metrics.recordsSkipped.inc(
      { location: metrics.location(page.locationUid), reason: 'dlq' },
      page.divertedCodes.length,
    );
    for (const code of page.divertedCodes) metrics.deadLetters.inc({ code });
  }
}
