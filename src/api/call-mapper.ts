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
import { SkippableError, type ErrorCode } from '../errors/index.js';
import type { ItemPosition, MappedItem, SingleCall, SingleCallVersion } from '../sync/model.js';
import { parseInstant } from '../time/instant.js';
import { isPlainObject } from '../json/json-object.js';

/**
 * Longest uid accepted. A uid is a record key, a header and part of every message about its call: an
 * unbounded one (a hostile or broken API) would make the records the broker refuses. Spec 2.3 gives no
 * type; 256 characters is far above any identifier seen in practice.
 */
export const MAX_UID_LENGTH = 256;

/**
 * Longest next-page cursor accepted. The cursor is stored in the offset record of every page, so an
 * unbounded one would make offset records the broker refuses; a page with a longer one is malformed.
 */
export const MAX_CURSOR_LENGTH = 4096;

/** Why a next-page cursor cannot be kept, or null when it can. */
export function cursorProblem(cursor: string): string | null {
  return cursor.length > MAX_CURSOR_LENGTH
    ? `the page's next cursor is ${cursor.length} characters long, more than the ${MAX_CURSOR_LENGTH} accepted`
    : null;
}

/**
 * The fields a dead letter may carry: spec 2.3's call fields minus customerPhoneNumber (personal data).
 * Matched exactly (a `CustomerPhoneNumber` or `customer.phone` is not on the list, so it never goes out).
 */
const DEAD_LETTER_FIELDS: ReadonlySet<string> = new Set([
  'uid',
  'locationUid',
  'updatedAt',
  'locationPhoneNumber',
  'startedAt',
  'endedAt',
  'isPrivate',
  'conversationUid',
]);

/** Longest string value a dead letter repeats; a longer one is cut and its length given. */
const DEAD_LETTER_STRING_LIMIT = MAX_UID_LENGTH;

/** What a dead letter says of an item that is not a JSON object: its type, never its content. */
const UNREADABLE_ITEM = '{"item":"unreadable"}';

/**
 * The item as JSON for the dead-letter topic: only the allow-listed fields, each only as a scalar (an
 * object or array is named by its type, never copied), strings capped, plus how many other fields were
 * left out. Total: never throws, whatever the item (10,000-deep nesting, a megabyte string, a getter
 * that throws), and bounded (under 3 KB), so a dead letter can always be written.
 */
export function deadLetterPayload(raw: unknown): string {
  try {
    if (!isPlainObject(raw)) return JSON.stringify({ item: describeType(raw) });
    const kept: Record<string, unknown> = {};
    let omitted = 0;
    for (const key of Object.keys(raw)) {
      if (DEAD_LETTER_FIELDS.has(key)) kept[key] = deadLetterValue(raw[key]);
      else omitted += 1;
    }
    if (omitted > 0) kept.omittedFields = omitted;
    return JSON.stringify(kept);
  } catch {
    return UNREADABLE_ITEM;
  }
}

function deadLetterValue(value: unknown): unknown {
  if (value === null || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value);
  if (typeof value === 'string') {
    return value.length <= DEAD_LETTER_STRING_LIMIT
      ? value
      : { truncated: value.slice(0, DEAD_LETTER_STRING_LIMIT), length: value.length };
  }
  return { type: describeType(value) };
}

function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
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
  const reject = (code: ErrorCode, message: string, position: ItemPosition | null): MappedItem => ({
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
  if (uid.length > MAX_UID_LENGTH) {
    return reject(
      'ITEM_UID_TOO_LONG',
      `the listed item's uid is ${uid.length} characters long, more than the ${MAX_UID_LENGTH} accepted`,
      null,
    );
  }
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

/** Maps the call object of GET {callPath}: the version it describes and its enrichment fields. */
export function mapSingleCall(raw: Record<string, unknown>, uid: string): SingleCall {
  return { version: versionOf(raw.updatedAt), enrichment: mapEnrichment(raw, uid) };
}

function versionOf(value: unknown): SingleCallVersion {
  if (value === undefined || value === null) return { kind: 'absent' };
  return typeof value === 'string' ? { kind: 'text', text: value } : { kind: 'other', type: typeof value };
}

/** Maps the body of GET {callPath} to the enrichment fields, or a SkippableError naming the bad field. */
export function mapEnrichment(raw: Record<string, unknown>, uid: string): SingleCall['enrichment'] {
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
