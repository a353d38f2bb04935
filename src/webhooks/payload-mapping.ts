/**
 * Where a delivery's payload says what happened: the event name, the call uid and, when there is one, the
 * location. The spec shows neither event names nor payload shapes (spec 6), so each is a dotted path
 * (webhooks.payload.*), read with the same rule as the API's configurable body fields (json/dotted-path.ts).
 *
 * Pure. Nothing is published from a payload (its phone numbers are null by spec 6, and it is unsigned data
 * as far as the record is concerned): a nudge only names which call, and where, to poll now.
 */
import { readPath } from '../json/dotted-path.js';
import { isPlainObject } from '../json/json-object.js';

export interface PayloadMapping {
  /** Dotted path of the event name, e.g. `type`. */
  eventPath: string;
  /** Events whose name starts with this act (`call.`); others are acknowledged and counted as ignored. */
  eventPrefix: string;
  /** Dotted path of the call uid, e.g. `data.uid`. */
  uidPath: string;
  /** Dotted path of the location uid, e.g. `data.locationUid`; absent from the payload is fine. */
  locationPath: string;
}

/** A call.* event: poll `uid`'s location now. */
export interface Nudge {
  event: string;
  uid: string;
  /** From the payload; null when it has none (resolved later from the index or the grant). */
  location: string | null;
}

export type MappingVerdict =
  | { kind: 'nudge'; nudge: Nudge }
  | { kind: 'ignored'; event: string }
  | { kind: 'malformed'; detail: string };

/** Identifiers are short printable strings: anything else is not a uid we would look up. */
const IDENTIFIER = /^[\x21-\x7e]{1,200}$/;

export function mapPayload(mapping: PayloadMapping, body: Uint8Array): MappingVerdict {
  let payload: unknown;
  try {
    payload = JSON.parse(Buffer.from(body).toString('utf8'));
  } catch {
    return { kind: 'malformed', detail: 'the body is not JSON' };
  }
  if (!isPlainObject(payload)) return { kind: 'malformed', detail: 'the body is not a JSON object' };
  const event = readPath(payload, mapping.eventPath);
  if (typeof event !== 'string' || event === '')
    return { kind: 'malformed', detail: `no event name at ${mapping.eventPath}` };
  if (!event.startsWith(mapping.eventPrefix)) return { kind: 'ignored', event };
  const uid = readPath(payload, mapping.uidPath);
  if (typeof uid !== 'string' || !IDENTIFIER.test(uid))
    return { kind: 'malformed', detail: `no call uid at ${mapping.uidPath}` };
  const location = readPath(payload, mapping.locationPath);
  if (location === undefined || location === null)
    return { kind: 'nudge', nudge: { event, uid, location: null } };
  if (typeof location !== 'string' || !IDENTIFIER.test(location))
    return { kind: 'malformed', detail: `the location at ${mapping.locationPath} is not an identifier` };
  return { kind: 'nudge', nudge: { event, uid, location } };
}
