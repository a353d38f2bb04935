/**
 * Maps raw API call objects to the fields the connector publishes. Pure; the edge where untrusted JSON
 * becomes typed data. Only the fields of spec 2.3 are kept: unknown extra fields are never published
 * (they could carry personal data the privacy policy knows nothing about).
 *
 * Every field is checked against what the Avro schema (schemas/call.avsc) accepts: strings-or-null for
 * uid, locationUid, phone numbers and conversationUid; RFC 3339 date-times for updatedAt, startedAt and
 * endedAt; boolean-or-null for isPrivate. An item that fails is a SkippableError, dead-lettered by the
 * orchestrator, and the traversal goes on.
 */
import { SkippableError } from '../errors/index.js';
import { parseInstant } from '../sync/instant.js';
import type { Call } from '../sync/model.js';
import { isPlainObject } from './body-path.js';

/**
 * A listed call before enrichment and privacy: customerPhoneNumber is still the API's value, and
 * `locationUid` is the traversal's location (the listing is filtered by it).
 */
export type ListedCall = Omit<Call, 'enriched' | 'customerPhoneNumberRedacted'>;

/** The fields GET {callPath} completes (spec 4.4). */
export interface Enrichment {
  startedAt: string | null;
  endedAt: string | null;
  isPrivate: boolean | null;
  conversationUid: string | null;
}

/** Where a rejected item sits in the listing order, when its uid and updatedAt are usable. */
export interface ItemPosition {
  uid: string;
  updatedAt: string;
}

export type MappedItem =
  | { ok: true; call: ListedCall }
  | { ok: false; error: SkippableError; position: ItemPosition | null; payload: string };

const PAYLOAD_LIMIT = 64 * 1024;

/** The item as JSON for the dead-letter topic, with customerPhoneNumber removed (privacy) and size capped. */
export function deadLetterPayload(raw: unknown): string {
  let value = raw;
  if (isPlainObject(raw) && 'customerPhoneNumber' in raw) {
    value = { ...raw, customerPhoneNumber: raw.customerPhoneNumber === null ? null : '[removed]' };
  }
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > PAYLOAD_LIMIT ? `${text.slice(0, PAYLOAD_LIMIT)}…[truncated]` : text;
}

type FieldCheck<T> = { ok: true; value: T } | { ok: false; problem: string };

function optionalString(item: Record<string, unknown>, field: string): FieldCheck<string | null> {
  const value = item[field];
  if (value === undefined || value === null) return { ok: true, value: null };
  if (typeof value === 'string') return { ok: true, value };
  return { ok: false, problem: `${field} is a ${typeof value}, not a string or null` };
}

function optionalDateTime(item: Record<string, unknown>, field: string): FieldCheck<string | null> {
  const value = item[field];
  if (value === undefined || value === null) return { ok: true, value: null };
  if (typeof value === 'string' && parseInstant(value) !== null) return { ok: true, value };
  return { ok: false, problem: `${field} is not an RFC 3339 date-time or null` };
}

function optionalBoolean(item: Record<string, unknown>, field: string): FieldCheck<boolean | null> {
  const value = item[field];
  if (value === undefined || value === null) return { ok: true, value: null };
  if (typeof value === 'boolean') return { ok: true, value };
  return { ok: false, problem: `${field} is a ${typeof value}, not a boolean or null` };
}

function collect<T extends Record<string, FieldCheck<unknown>>>(
  checks: T,
):
  | { ok: true; values: { [K in keyof T]: T[K] extends FieldCheck<infer V> ? V : never } }
  | { ok: false; problems: string[] } {
  const problems: string[] = [];
  const values: Record<string, unknown> = {};
  for (const [key, check] of Object.entries(checks)) {
    if (check.ok) values[key] = check.value;
    else problems.push(check.problem);
  }
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, values: values as { [K in keyof T]: T[K] extends FieldCheck<infer V> ? V : never } };
}

/** Maps one listed item. `locationUid` is the traversal's location. */
export function mapListedItem(raw: unknown, locationUid: string): MappedItem {
  const reject = (code: string, message: string, position: ItemPosition | null): MappedItem => ({
    ok: false,
    error: new SkippableError(code, message, { details: { locationUid } }),
    position,
    payload: deadLetterPayload(raw),
  });
  if (!isPlainObject(raw))
    return reject('ITEM_SCHEMA_REJECTED', 'the listed item is not a JSON object', null);
  const uid = raw.uid;
  if (uid === undefined || uid === null || uid === '')
    return reject('ITEM_NO_UID', 'the listed item has no uid', null);
  if (typeof uid !== 'string')
    return reject('ITEM_NO_UID', `the listed item's uid is a ${typeof uid}, not a string`, null);
  const updatedAt = raw.updatedAt;
  if (typeof updatedAt !== 'string' || parseInstant(updatedAt) === null) {
    return reject(
      'ITEM_BAD_UPDATED_AT',
      `call ${uid}: updatedAt is missing or not an RFC 3339 date-time`,
      null,
    );
  }
  const position = { uid, updatedAt };
  const checked = collect({
    locationUid: optionalString(raw, 'locationUid'),
    locationPhoneNumber: optionalString(raw, 'locationPhoneNumber'),
    customerPhoneNumber: optionalString(raw, 'customerPhoneNumber'),
    startedAt: optionalDateTime(raw, 'startedAt'),
    endedAt: optionalDateTime(raw, 'endedAt'),
    isPrivate: optionalBoolean(raw, 'isPrivate'),
    conversationUid: optionalString(raw, 'conversationUid'),
  });
  if (!checked.ok)
    return reject('ITEM_SCHEMA_REJECTED', `call ${uid}: ${checked.problems.join('; ')}`, position);
  const v = checked.values;
  return {
    ok: true,
    call: {
      uid,
      locationUid,
      updatedAt,
      locationPhoneNumber: v.locationPhoneNumber,
      customerPhoneNumber: v.customerPhoneNumber,
      startedAt: v.startedAt,
      endedAt: v.endedAt,
      isPrivate: v.isPrivate,
      conversationUid: v.conversationUid,
    },
  };
}

/** Maps the body of GET {callPath} to the enrichment fields, or a SkippableError naming the bad field. */
export function mapEnrichment(
  raw: Record<string, unknown>,
  uid: string,
): { ok: true; enrichment: Enrichment } | { ok: false; error: SkippableError } {
  const checked = collect({
    startedAt: optionalDateTime(raw, 'startedAt'),
    endedAt: optionalDateTime(raw, 'endedAt'),
    isPrivate: optionalBoolean(raw, 'isPrivate'),
    conversationUid: optionalString(raw, 'conversationUid'),
  });
  if (!checked.ok) {
    return {
      ok: false,
      error: new SkippableError(
        'ITEM_SCHEMA_REJECTED',
        `call ${uid} (single-call response): ${checked.problems.join('; ')}`,
      ),
    };
  }
  return { ok: true, enrichment: checked.values };
}
