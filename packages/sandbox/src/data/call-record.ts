/**
 * A call as the sandbox holds it, and its two wire shapes (listed item, single call).
 *
 * Times are epoch milliseconds in memory (cheap to compare and to hold a million of) and ISO-8601 strings
 * with millisecond precision in UTC on the wire (`2026-01-02T03:04:05.678Z`).
 */

export interface CallRecord {
  readonly uid: string;
  readonly locationUid: string;
  /** Sort key of the listing; not unique. Changed only through CallStore (it re-indexes the record). */
  updatedAtMs: number;
  locationPhoneNumber: string;
  customerPhoneNumber: string | null;
  startedAtMs: number;
  endedAtMs: number;
  isPrivate: boolean;
  conversationUid: string | null;
  /** Synced from a third-party call-tracking integration: never listed (spec 4.3 rule 9). */
  thirdParty: boolean;
  /** false: the CRM record cannot be represented, so the listing omits it from its page (rule 6). */
  representable: boolean;
}

/** The single-call shape (GET /v4/calls/{uid}) and the ground truth's shape: every field with its value. */
export interface SandboxCall {
  uid: string;
  locationUid: string;
  updatedAt: string;
  locationPhoneNumber: string;
  customerPhoneNumber: string | null;
  startedAt: string;
  endedAt: string;
  isPrivate: boolean;
  conversationUid: string | null;
}

/** A listed item: the fields of spec 2.3 with the listing's nulls (rule 10). */
export interface ListedCall {
  uid: string;
  locationUid: string;
  updatedAt: string;
  locationPhoneNumber: string;
  customerPhoneNumber: string | null;
  startedAt: null;
  endedAt: null;
  isPrivate: null;
  conversationUid: null;
}

export function isoMs(ms: number): string {
  return new Date(ms).toISOString();
}

// The two shapes are written out in full (no shared spread): these run once per item of every page,
// and plain object literals are several times cheaper than spreading a helper's result.
export function toSingleCall(r: CallRecord): SandboxCall {
  return {
    uid: r.uid,
    locationUid: r.locationUid,
    updatedAt: isoMs(r.updatedAtMs),
    locationPhoneNumber: r.locationPhoneNumber,
    customerPhoneNumber: r.customerPhoneNumber,
    startedAt: isoMs(r.startedAtMs),
    endedAt: isoMs(r.endedAtMs),
    isPrivate: r.isPrivate,
    conversationUid: r.conversationUid,
  };
}

export function toListedCall(r: CallRecord): ListedCall {
  return {
    uid: r.uid,
    locationUid: r.locationUid,
    updatedAt: isoMs(r.updatedAtMs),
    locationPhoneNumber: r.locationPhoneNumber,
    customerPhoneNumber: r.customerPhoneNumber,
    startedAt: null,
    endedAt: null,
    isPrivate: null,
    conversationUid: null,
  };
}

const q = JSON.stringify;

/**
 * JSON.stringify(toListedCall(r)), written by hand: a listing page serialises up to 100 of these per
 * request, and building the text directly costs about half of making the object and stringifying it.
 * A unit test holds the two equal.
 */
export function listedCallJson(r: CallRecord): string {
  return (
    `{"uid":${q(r.uid)},"locationUid":${q(r.locationUid)},"updatedAt":"${isoMs(r.updatedAtMs)}"` +
    `,"locationPhoneNumber":${q(r.locationPhoneNumber)},"customerPhoneNumber":${q(r.customerPhoneNumber)}` +
    ',"startedAt":null,"endedAt":null,"isPrivate":null,"conversationUid":null}'
  );
}

/** Total order of the listing: updatedAt, then uid (so records sharing an instant still have a place). */
export function compareKey(aMs: number, aUid: string, bMs: number, bUid: string): number {
  if (aMs !== bMs) return aMs < bMs ? -1 : 1;
  if (aUid === bUid) return 0;
  return aUid < bUid ? -1 : 1;
}
