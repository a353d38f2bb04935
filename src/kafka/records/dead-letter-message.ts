/**
 * The dead-letter topic's record format. Value: the allow-listed fields of the item as JSON (built by
 * whoever made the DeadLetter; never the customer number). Key: the call's uid when one is known (so a
 * call's dead letters share a partition with each other and compact with it), else the location uid.
 *
 * Headers follow Kafka Connect's dead-letter convention (`__connect.errors.*`, see Connect's
 * DeadLetterQueueReporter), so tools that read Connect's dead letters read ours; our own
 * `calls-connector.*` headers stay as aliases. A source connector's record never reached a partition or
 * an offset, so `__connect.errors.partition`/`offset` are not set; `__connect.errors.topic` is the topic
 * the record was meant for (set by topicMessages, which knows the topic names).
 *
 * Bounded: every header is capped (HEADER_LIMIT) and the value too (VALUE_LIMIT), so a dead letter always
 * fits the broker's message size, whatever the item was.
 */
import type { Message } from 'kafkajs';
import type { DeadLetter } from '../../sync/model.js';

export const DLQ_HEADERS = {
  code: 'calls-connector.error.code',
  message: 'calls-connector.error.message',
  location: 'calls-connector.location.uid',
  connector: 'calls-connector.connector.name',
  failedAt: 'calls-connector.failed.at',
  uid: 'calls-connector.call.uid',
} as const;

/** Kafka Connect's dead-letter headers (org.apache.kafka.connect.runtime.errors.DeadLetterQueueReporter). */
export const CONNECT_ERROR_HEADERS = {
  topic: '__connect.errors.topic',
  connectorName: '__connect.errors.connector.name',
  taskId: '__connect.errors.task.id',
  stage: '__connect.errors.stage',
  className: '__connect.errors.class.name',
  exceptionClass: '__connect.errors.exception.class.name',
  exceptionMessage: '__connect.errors.exception.message',
} as const;

/**
 * Where the record failed, in Connect's stage names: TASK_POLL (the item as listed or fetched was
 * refused), VALUE_CONVERTER (the Avro encoder refused the call).
 */
export type DeadLetterStage = 'TASK_POLL' | 'VALUE_CONVERTER';

const HEADER_LIMIT = 1024;
const VALUE_LIMIT = 64 * 1024;

/** The error class every dead letter comes from (see src/errors): what Connect calls the exception class. */
const EXCEPTION_CLASS = 'SkippableError';

function capped(text: string, limit: number): string {
  return text.length > limit ? `${text.slice(0, limit)}…[truncated]` : text;
}

export function deadLetterMessage(
  deadLetter: DeadLetter,
  connectorName: string,
  failedAt: Date,
  stage: DeadLetterStage = 'TASK_POLL',
): Message {
  const uid = deadLetter.uid ?? null;
  const message = capped(`${deadLetter.code}: ${deadLetter.message}`, HEADER_LIMIT);
  return {
    key: capped(uid ?? deadLetter.locationUid, HEADER_LIMIT),
    value: capped(deadLetter.payload, VALUE_LIMIT),
    headers: {
      [CONNECT_ERROR_HEADERS.connectorName]: capped(connectorName, HEADER_LIMIT),
      [CONNECT_ERROR_HEADERS.taskId]: '0',
      [CONNECT_ERROR_HEADERS.stage]: stage,
      [CONNECT_ERROR_HEADERS.className]: 'calls-connector',
      [CONNECT_ERROR_HEADERS.exceptionClass]: EXCEPTION_CLASS,
      [CONNECT_ERROR_HEADERS.exceptionMessage]: message,
      [DLQ_HEADERS.code]: capped(deadLetter.code, HEADER_LIMIT),
      [DLQ_HEADERS.message]: capped(deadLetter.message, HEADER_LIMIT),
      [DLQ_HEADERS.location]: capped(deadLetter.locationUid, HEADER_LIMIT),
      [DLQ_HEADERS.connector]: capped(connectorName, HEADER_LIMIT),
      [DLQ_HEADERS.failedAt]: failedAt.toISOString(),
      ...(uid === null ? {} : { [DLQ_HEADERS.uid]: capped(uid, HEADER_LIMIT) }),
    },
  };
}

/** A dead-letter message with the topic its record was meant for (Connect's `__connect.errors.topic`). */
export function withOriginalTopic(message: Message, topic: string): Message {
  return { ...message, headers: { ...message.headers, [CONNECT_ERROR_HEADERS.topic]: topic } };
}
