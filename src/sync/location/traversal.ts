/**
 * The traversal rules of spec 4.3 as pure functions over a LocationOffset. No I/O: the orchestrator
 * (location-sync.ts) fetches, maps and commits; these functions decide what to ask for and what a page
 * does to the offset.
 *
 * The contract, in one place:
 * - Traversals always list order=asc (rules 7, 8); the only order=desc request is the split check of a
 *   location's lanes (split-check.ts), which reads the newest item and follows no cursor. The first page of a traversal sends `since` (absent when unknown),
 *   `locationUid` and `limit`; later pages send the cursor and `limit` only, since a cursor carries its own
 *   since/order/locationUid and overrides them (rule 3).
 * - Every page's checkpoint stores the next cursor, so an interrupted traversal resumes where it stopped.
 *   `since` moves, to the watermark, only when nextCursor is null (rules 4, 5): never mid-traversal.
 * - A page shorter than `limit`, even an empty one, is not the end while nextCursor is set (rule 6).
 * - Inclusive boundary: a record whose updatedAt is the watermark instant, whose uid is in `boundary` and
 *   whose fingerprint (of its listed fields) is the one remembered for that uid was already published: it
 *   is skipped. A record new at that instant, or one whose listed fields changed again within that same
 *   instant (another fingerprint), is published and joins the boundary with its fingerprint. So re-reading
 *   `since = watermark` (inclusive, rule 2) neither loses nor doubles, even for a second change at one
 *   instant. A boundary uid with no remembered fingerprint (an offset stored by format version 1) matches
 *   no fingerprint: it is published again once, since a second change could otherwise be lost (doubling
 *   is possible there, loss is not). An entry with no fingerprint (a caller that computes none) matches by
 *   uid alone.
 * - Boundary cap: at most `boundaryCap` uids are kept, and at most `boundaryMaxBytes` of them as stored
 *   (uid and fingerprint, JSON-encoded: see boundaryEntryBytes), so the offset record always fits the
 *   offsets topic's max.message.bytes whatever the uids' length. Past either, `boundaryOverflow` is set and
 *   records at that instant that did not fit are published but not remembered, so the next traversal (which
 *   starts at that instant) publishes them again. Doubling is possible there, loss is not. The flag clears
 *   as soon as the watermark moves past that instant.
 * - Records older than the watermark can only come from an API breaking rule 1 (sorting) or filtering
 *   more coarsely than the `since` we sent. We cannot know whether they were published, so they are
 *   published (losing is worse than doubling) without moving the watermark or the boundary, and reported
 *   so the orchestrator can log and count them.
 * - An invalid or expired cursor restarts from `since = watermark`, keeping the boundary: nothing lost,
 *   nothing doubled.
 *
 * Instants are compared exactly (instant.ts), whatever precision or offset each string uses.
 */
import { compareInstants, parseInstant, type Instant } from '../../time/instant.js';
import type { HistoryOffset, LaneOffset, LocationOffset } from '../model.js';

export interface TraversalSettings {
  locationUid: string;
  /** `limit` of every request (1..100). */
  pageSize: number;
  /** `since` of the first traversal of a location with no stored offset; null = from the beginning. */
  startSince: string | null;
  boundaryCap: number;
}

/**
 * A listing request. `locationUid` of a `next` request is not sent (a cursor goes alone, spec 4.3 rule
 * 3): the API adapter stamps it on the calls it maps.
 */
export type PageRequest =
  | { kind: 'first'; locationUid: string; since: string | null; order: 'asc' | 'desc'; limit: number }
  | { kind: 'next'; locationUid: string; cursor: string; limit: number };

/** The request for the next page of a location, given its latest committed offset. */
export function nextPageRequest(offset: LocationOffset, settings: TraversalSettings): PageRequest {
  if (offset.cursor !== null)
    return {
      kind: 'next',
      locationUid: settings.locationUid,
      cursor: offset.cursor,
      limit: settings.pageSize,
    };
  return {
    kind: 'first',
    locationUid: settings.locationUid,
    since: offset.since ?? settings.startSince,
    order: 'asc',
    limit: settings.pageSize,
  };
}

/** An item whose uid and updatedAt are known (a mapped call, or a dead letter that had them). */
export interface Positioned {
  uid: string;
  updatedAt: string;
  /** Fingerprint of the listed fields (fingerprint.ts); undefined = match by uid alone. */
  fingerprint?: string;
}

export interface PageOutcome<T extends Positioned> {
  /** To publish (or dead-letter), in page order. Includes `belowWatermark`. */
  accepted: T[];
  /** Already published at the boundary instant: skipped (boundary_dedupe). */
  duplicates: T[];
  /** Accepted although older than the watermark (the API broke rule 1): see the module comment. */
  belowWatermark: T[];
  /** The offset to commit with this page. */
  offset: LocationOffset;
  /** nextCursor was null: the traversal is complete and `since` moved to the watermark. */
  complete: boolean;
}

function instantOf(text: string): Instant {
  const instant = parseInstant(text);
  if (instant === null) throw new RangeError(`not an RFC 3339 date-time: ${text}`);
  return instant;
}

/**
 * What one boundary entry adds to the stored offset: the uid as a JSON string in `boundary`, and again as a
 * key of `boundaryFingerprints` with its fingerprint, with their separators. An upper bound for any
 * encoding that stores the uid twice and the fingerprint once as JSON text (offset-codec.ts does).
 */
export function boundaryEntryBytes(uid: string, fingerprint: string | undefined): number {
  const uidBytes = Buffer.byteLength(JSON.stringify(uid));
  return (
    uidBytes +
    1 +
    (fingerprint === undefined ? 0 : uidBytes + Buffer.byteLength(JSON.stringify(fingerprint)) + 2)
  );
}

/**
 * Applies one page to the offset it was requested from. `entries` must have valid updatedAt strings
 * (the call mapper guarantees it). `nextCursor` is the page's cursor, null at the end.
 */
export function applyPage<T extends Positioned>(
  offset: LocationOffset,
  entries: readonly T[],
  nextCursor: string | null,
  boundaryCap: number,
  boundaryMaxBytes = Number.POSITIVE_INFINITY,
): PageOutcome<T> {
  let watermark = offset.watermark;
  let watermarkInstant = watermark === null ? null : instantOf(watermark);
  let boundary = new Set(offset.boundary);
  let fingerprints = new Map(Object.entries(offset.boundaryFingerprints ?? {}));
  let overflow = offset.boundaryOverflow === true;
  let boundaryBytes = 0;
  for (const uid of boundary) boundaryBytes += boundaryEntryBytes(uid, fingerprints.get(uid));
  const remember = (entry: T): void => {
    if (entry.fingerprint === undefined) fingerprints.delete(entry.uid);
    else fingerprints.set(entry.uid, entry.fingerprint);
  };
  const accepted: T[] = [];
  const duplicates: T[] = [];
  const belowWatermark: T[] = [];

  for (const entry of entries) {
    const at = instantOf(entry.updatedAt);
    const order = watermarkInstant === null ? 1 : compareInstants(at, watermarkInstant);
    if (order > 0) {
      watermark = entry.updatedAt;
      watermarkInstant = at;
      boundary = new Set([entry.uid]);
      fingerprints = new Map();
      remember(entry);
      boundaryBytes = boundaryEntryBytes(entry.uid, entry.fingerprint);
      overflow = false;
      accepted.push(entry);
    } else if (order === 0) {
      if (boundary.has(entry.uid)) {
        const known = fingerprints.get(entry.uid);
        if (known === entry.fingerprint) {
          duplicates.push(entry);
          continue;
        }
        // A new version at the same instant (or a version-1 entry gaining its fingerprint): its bytes count
        // like a new entry's. Past the budget the old fingerprint stays: this version is published again
        // later (doubling), never lost.
        const grown = boundaryEntryBytes(entry.uid, entry.fingerprint) - boundaryEntryBytes(entry.uid, known);
        if (boundaryBytes + grown <= boundaryMaxBytes) {
          remember(entry);
          boundaryBytes += grown;
        } else overflow = true;
      } else if (
        boundary.size < boundaryCap &&
        boundaryBytes + boundaryEntryBytes(entry.uid, entry.fingerprint) <= boundaryMaxBytes
      ) {
        boundary.add(entry.uid);
        remember(entry);
        boundaryBytes += boundaryEntryBytes(entry.uid, entry.fingerprint);
      } else overflow = true;
      accepted.push(entry);
    } else {
      belowWatermark.push(entry);
      accepted.push(entry);
    }
  }

  const complete = nextCursor === null;
  const next: LocationOffset = {
    since: complete ? (watermark ?? offset.since) : offset.since,
    cursor: nextCursor,
    watermark,
    boundary: [...boundary],
  };
  if (overflow) next.boundaryOverflow = true;
  if (fingerprints.size > 0) next.boundaryFingerprints = Object.fromEntries(fingerprints);
  return { accepted, duplicates, belowWatermark, offset: next, complete };
}

/**
 * The offset to continue from after the API rejected our cursor: a fresh traversal from the watermark
 * (inclusive), the boundary kept so records at that instant are not published twice.
 */
export function restartAfterInvalidCursor(offset: LocationOffset): LocationOffset {
  return {
    ...offset,
    since: offset.watermark ?? offset.since,
    cursor: null,
    boundary: [...offset.boundary],
    ...(offset.boundaryFingerprints === undefined
      ? {}
      : { boundaryFingerprints: { ...offset.boundaryFingerprints } }),
  };
}

/**
 * Whether two offsets are the same value, both lanes (used to tell whether an ambiguous commit went through).
 */
export function sameOffset(a: LocationOffset, b: LocationOffset): boolean {
  return sameLane(a, b) && a.signal === b.signal && sameHistory(a.history, b.history);
}

function sameHistory(a: HistoryOffset | undefined, b: HistoryOffset | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.until === b.until && a.signal === b.signal && sameLane(a, b);
}

/** Whether two lane positions are the same value (their own fields only). */
export function sameLane(a: LaneOffset, b: LaneOffset): boolean {
  return (
    a.since === b.since &&
    a.cursor === b.cursor &&
    a.watermark === b.watermark &&
    (a.boundaryOverflow === true) === (b.boundaryOverflow === true) &&
    a.boundary.length === b.boundary.length &&
    a.boundary.every((uid, i) => uid === b.boundary[i]) &&
    sameFingerprints(a.boundaryFingerprints ?? {}, b.boundaryFingerprints ?? {})
  );
}

function sameFingerprints(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((uid) => a[uid] === b[uid]);
}
