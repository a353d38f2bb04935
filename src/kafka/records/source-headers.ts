/**
 * Source metadata of a call record, as Kafka record headers (Debezium puts the same in its `source` block;
 * headers keep our Avro value free of it, and consumers route or audit on them without decoding the value):
 * which connector published the record, for which location, in which traversal, from which page and request
 * position, and for a record a backfill signal re-read, the signal. Absent values (the first page has no cursor; a first traversal has no since) are left out.
 *
 * Pure; page-messages.ts adds them to every call record of a page.
 */
import type { PageSource } from '../../sync/ports.js';

export const SOURCE_HEADERS = {
  connector: 'calls-connector.source.connector',
  location: 'calls-connector.source.location',
  traversal: 'calls-connector.source.traversal',
  page: 'calls-connector.source.page',
  since: 'calls-connector.source.since',
  cursor: 'calls-connector.source.cursor',
  /** A record re-read for a backfill signal: the signal's id (a consumer tells a re-read from a change by it). */
  signal: 'calls-connector.source.signal',
} as const;

export function sourceHeaders(
  connectorName: string,
  locationUid: string,
  source: PageSource | undefined,
): Record<string, string> {
  const headers: Record<string, string> = {
    [SOURCE_HEADERS.connector]: connectorName,
    [SOURCE_HEADERS.location]: locationUid,
  };
  if (source === undefined) return headers;
  headers[SOURCE_HEADERS.traversal] = source.traversalId;
  headers[SOURCE_HEADERS.page] = String(source.page);
  if (source.since !== null) headers[SOURCE_HEADERS.since] = source.since;
  if (source.cursor !== null) headers[SOURCE_HEADERS.cursor] = source.cursor;
  if (source.signal !== undefined) headers[SOURCE_HEADERS.signal] = source.signal;
  return headers;
}
