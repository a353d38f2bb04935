/**
 * Plain data the sync engine works on. No behaviour here: rules live in pure functions beside it.
 */

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
 * Per-location offset, stored as JSON in the compacted offsets topic (one record per location).
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
export interface LocationOffset {
  since: string | null;
  cursor: string | null;
  watermark: string | null;
  boundary: string[];
  boundaryOverflow?: boolean;
  boundaryFingerprints?: Record<string, string>;
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
