/**
 * The dead-letter topic's record format. Value: the item as the API sent it (JSON, customer number
 * already removed by whoever built the DeadLetter). Key: the location uid. Headers say why and where,
 * so the topic can be inspected and replayed without our code.
 */
import type { Message } from 'kafkajs';
import type { DeadLetter } from '../sync/model.js';

export const DLQ_HEADERS = {
  code: 'calls-connector.error.code',
  message: 'calls-connector.error.message',
  location: 'calls-connector.location.uid',
  connector: 'calls-connector.connector.name',
  failedAt: 'calls-connector.failed.at',
} as const;

export function deadLetterMessage(deadLetter: DeadLetter, connectorName: string, failedAt: Date): Message {
  return {
    key: deadLetter.locationUid,
    value: deadLetter.payload,
    headers: {
      [DLQ_HEADERS.code]: deadLetter.code,
      [DLQ_HEADERS.message]: deadLetter.message,
      [DLQ_HEADERS.location]: deadLetter.locationUid,
      [DLQ_HEADERS.connector]: connectorName,
      [DLQ_HEADERS.failedAt]: failedAt.toISOString(),
    },
  };
}
