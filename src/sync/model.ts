/**
 * Plain data the sync engine works on. No behaviour here: rules live in pure functions beside it.
 */
import type { SkippableError } from '../errors/index.js';

/**
 * A call as the connector publishes it: a listed item, completed by GET /v4/calls/{uid} when enrichment
 * is on, with the privacy policy applied. Times are ISO-8601 strings exactly as the API sent them
 * (updatedAt may carry more precision than a JS Date); the Avro codec converts them.
 */
export interface Call {
  uid: string;
  /** The location the call was listed under (the traversal's locationUid). */
  locationUid: string;
  updatedAt: string;
  locationPhoneNumber: string | null;
  /** null unless the privacy policy allows it: see PrivacyPolicy. */
  customerPhoneNumber: string | null;
  startedAt: string | null;
  endedAt: string | null;
  /** null when not enriched (unknown). */
  isPrivate: boolean | null;
  conversationUid: string | null;
  /** Whether GET /v4/calls/{uid} completed this record. */
  enriched: boolean;
  /** Whether customerPhoneNumber was removed by the privacy policy. */
  customerPhoneNumberRedacted: boolean;
}

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

/**
 * One listed item as the API adapter mapped it: a call, or a rejection the orchestrator dead-letters
 * (with its position in the listing order when known, and its allow-listed fields as `payload`).
 */
export type MappedItem =
  | { ok: true; call: ListedCall }
  | { ok: false; error: SkippableError; position: ItemPosition | null; payload: string };

/**
 * The updatedAt of a single-call body: absent (the spec does not promise it there), a string as sent
 * (not necessarily a date-time), or a value of another JSON type, named by its type.
 */
export type SingleCallVersion =
  { kind: 'absent' } | { kind: 'text'; text: string } | { kind: 'other'; type: string };

/**
 * GET {callPath}'s answer as the API adapter mapped it: the version it describes, and its enrichment
 * fields or why they are unusable (a field the Avro schema would reject).
 */
export interface SingleCall {
  version: SingleCallVersion;
  enrichment: { ok: true; enrichment: Enrichment } | { ok: false; error: SkippableError };
}

/**
 * How urgent a request is, for the API adapter's rate limiter: `live` (the polls of caught-up locations
 * and their single calls) goes before `backfill` (history), so a tight budget delays history, not the
 * present. The rule that picks it: priority.ts.
 */
export interface RequestHint {
  priority: 'live' | 'backfill';
}

/**
 * The customer phone number policy (privacy.ts): publish it only when GET {callPath} said the call is
 * not private, or never.
 */
export type PrivacyPolicy = 'redact-unless-public' | 'redact-always';

/**
 * The position of one lane (a location that is not split has one lane, its LocationOffset), stored as JSON
 * in the compacted offsets topic (one record per location, offset-codec.ts).
 *
 * - since: inclusive lower bound (`updatedAt >= since`) of the current traversal; null = from the beginning.
 * - cursor: the next page of the current traversal; null between traversals (the next starts at `since`).
 * - watermark: highest updatedAt published so far; null before the first record.
 * - boundary: uids already published whose updatedAt equals `watermark`, so the inclusive `since`
 *   neither loses nor doubles records sharing the boundary instant. Capped (poll.boundaryCap); when the
 *   cap is hit `boundaryOverflow` is set and records at that instant may be published again (never lost).
 * - boundaryFingerprints: per boundary uid, the fingerprint of the listed fields published for it
 *   (traversal.ts), so a call changed twice within one updatedAt value is published again, not skipped.
 *   A boundary uid without one (an offset of format version 1) was published in an unknown version: it
 *   is published again when listed (once), never skipped. Absent when no fingerprint is known.
 */
export interface LaneOffset {
  since: string | null;
  cursor: string | null;
  watermark: string | null;
  boundary: string[];
  boundaryOverflow?: boolean;
  boundaryFingerprints?: Record<string, string>;
}

/**
 * The history lane of a split location (lanes.ts): its own traversal position over [since, until), listed
 * ascending like any traversal, and `until` (T0), the instant from which the live lane (the offset's own
 * fields) lists. Removed from the offset in the commit of the page that reaches `until` (the lanes merge).
 */
export interface HistoryOffset extends LaneOffset {
  until: string;
  /**
   * The id of the backfill signal this lane reads for (signal-steps-rule.ts): its records carry a header naming
   * it, and the commit that merges the lane completes the signal. Absent for the history lane of a split.
   */
  signal?: string;
}

/**
 * A location's offset: its live lane (the fields of LaneOffset, the only lane of a location that is not
 * split) and, while it backfills behind the present, its history lane (`history`). Both are stored in one
 * record, so every commit writes the location's whole state.
 */
export interface LocationOffset extends LaneOffset {
  history?: HistoryOffset;
  /**
   * The id of the last signal (a backfill or a reset) this location carried out, kept by every commit until the
   * next one: a signal handed over again (an instance restarted or took the location over before reading the
   * signal's `done` back) is recognised as carried out, never started twice (signal-steps-rule.ts).
   */
  signal?: string;
}

/** The offset of a location never traversed. Frozen: derive new offsets, never mutate this one. */
export const EMPTY_OFFSET: Readonly<LocationOffset> = Object.freeze({
  since: null,
  cursor: null,
  watermark: null,
  boundary: [],
});

/** A listed item that could not be mapped or encoded: goes to the dead-letter topic, never lost silently. */
export interface DeadLetter {
  locationUid: string;
  /** The call's uid when the item had a usable one (the dead letter is keyed by it), else null/absent. */
  uid?: string | null;
  /** Stable error code, e.g. ITEM_NO_UID, ITEM_BAD_UPDATED_AT, ITEM_SCHEMA_REJECTED. */
  code: string;
  message: string;
  /** The item's allow-listed fields as JSON (see deadLetterPayload): never the customer number. */
  payload: string;
}
