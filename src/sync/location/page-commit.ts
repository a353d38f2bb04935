/**
 * What one page commits (PageCommit) and whether it needs a commit at all. Pure over plain data: the
 * orchestrator (location-sync.ts) hands the result to the commit driver (commit-driver.ts).
 */
import type { LaneOffset, LocationOffset } from '../model.js';
import type { AssembledPage } from './page-pipeline.js';
import type { PageCommit, PageRequest } from '../ports.js';
import { sameOffset } from './traversal.js';

/** Where a page of a traversal was listed: its traversal id, its page number there, its request, its lane's start. */
export interface PageOrigin {
  traversalId: string;
  page: number;
  request: PageRequest;
  from: LaneOffset;
  /** The backfill signal the page's lane reads for (a history lane it started). */
  signal?: string;
}

/**
 * The commit of `page`: its records, the location's `offset` after it, and `committed`, the offset known to
 * be stored (against which the sink judges a read-back, commit-outcome.ts); its source for the records' headers;
 * `completes`, the signal the page completes (a backfill's history lane merging).
 */
export function pageCommit(
  locationUid: string,
  origin: PageOrigin,
  page: AssembledPage,
  offset: LocationOffset,
  committed: LocationOffset,
  completes?: string,
): PageCommit {
  const { traversalId, request, from } = origin;
  return {
    locationUid,
    calls: page.calls,
    deadLetters: page.deadLetters,
    offset,
    committed,
    ...(page.tombstones.length > 0 && { tombstones: page.tombstones }),
    source: {
      traversalId,
      page: origin.page,
      since: from.since,
      cursor: request.kind === 'next' ? request.cursor : null,
      ...(origin.signal !== undefined && { signal: origin.signal }),
    },
    ...(completes !== undefined && { signalDone: completes }),
  };
}

/**
 * An idle page needs no commit: it publishes, dead-letters and tombstones nothing, and leaves the offset
 * equal to what is known to be stored (`committed`). Polling quiet locations then costs the HTTP requests
 * only, not a Kafka transaction and an offset record per page. That holds across the pages of a live traversal
 * whose boundary spans several pages (many calls at the newest instant): while the store holds no cursor and
 * the pages moved nothing but the cursor, a restart from the stored offset lists the same calls again and the
 * boundary skips them, so the cursor need not be stored. A commit is still made whenever the store may differ
 * from `committed` otherwise: when `position` moved away from it uncommitted (a stored cursor rejected and
 * cleared, which the store must forget).
 */
export function isIdlePage(commit: PageCommit, position: LocationOffset, committed: LocationOffset): boolean {
  if (commit.calls.length > 0 || commit.deadLetters.length > 0 || (commit.tombstones?.length ?? 0) > 0)
    return false;
  if (commit.signalDone !== undefined) return false;
  if (sameOffset(position, committed) && sameOffset(commit.offset, committed)) return true;
  return (
    committed.cursor === null &&
    sameOffset({ ...position, cursor: null }, committed) &&
    sameOffset({ ...commit.offset, cursor: null }, committed)
  );
}

/**
 * The offset a location moves to after a page committed as `stored`: `after`, or, for an idle page that leaves
 * the offset as stored, the `committed` object already held. The equal copy the page built then dies young
 * instead of living an interval (and being promoted to the old generation) per quiet location.
 */
export function offsetKept(
  stored: 'stored' | 'idle',
  after: LocationOffset,
  committed: LocationOffset,
): LocationOffset {
  return stored === 'idle' && sameOffset(after, committed) ? committed : after;
}
