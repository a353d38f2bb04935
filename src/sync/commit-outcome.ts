/**
 * The one rule for "did the commit happen, and what is stored", over plain data (issue 20, F3).
 *
 * A location's sink is its only writer while it writes (single mode: a newer instance fences this one, which
 * then stands by; distributed mode: a partition's locations are dropped with it). So when this LocationSync
 * reads its offset back, only two stored values are legitimate: the one it last committed, or the offset of a
 * commit whose outcome it does not know; a third only after its sink re-initialised (a newer instance ran
 * meanwhile and is gone). A value behind the committed one, or any other before a re-initialisation, is a
 * stale read, not a newer truth: the offsets topic is read to its
 * last stable offset, which lags a committed transaction while its markers are pending (a broker restart, a
 * leader move), so the read can show an OLDER offset. Adopting it would move the location backwards and
 * publish its last pages again. It is never adopted: the location reads again later (after its sink's
 * producer initialised, which waits for pending markers).
 *
 * One equality decides (traversal.ts sameOffset).
 */
import { ConnectorError, RetriableError } from '../errors/index.js';
import type { LocationOffset } from './model.js';
import { parseInstant, toEpochMillis } from '../time/instant.js';
import { sameOffset } from './traversal.js';

/**
 * What a read-back says:
 * - 'stored': the pending page's offset is stored (its commit took effect);
 * - 'rejected': the last committed offset is stored, so the pending page is not (commit it again);
 * - 'superseded': another, newer offset is stored (written by an instance that has run since and is gone:
 *   this one's sink re-initialised only after Kafka showed no other instance); continue from it;
 * - 'unrecognised': a stale read; keep what is known, read again later.
 */
export type ReadBack = 'stored' | 'rejected' | 'superseded' | 'unrecognised';

/**
 * Reads `stored` against the last committed offset and the offset of the page whose outcome is unknown
 * (null: none). A page that leaves the offset as it was (equal to `committed`) cannot be recognised in the
 * store: 'rejected' (committed again rather than possibly lost). Any other value is adopted only when it was
 * read after the sink's producer initialised again (`afterInit`: pending markers are written by then) and is
 * not behind `committed` (an older watermark is never legitimate: the watermark only grows); otherwise it
 * is 'unrecognised'.
 */
export function readBack(
  stored: LocationOffset,
  committed: LocationOffset,
  pending: LocationOffset | null,
  afterInit: boolean,
): ReadBack {
  if (sameOffset(stored, committed)) return 'rejected';
  if (pending !== null && sameOffset(stored, pending)) return 'stored';
  if (!afterInit || isBehind(stored, committed)) return 'unrecognised';
  return 'superseded';
}

/** `stored`'s watermark is older than `committed`'s (or missing while it has one). */
export function isBehind(stored: LocationOffset, committed: LocationOffset): boolean {
  if (committed.watermark === null) return false;
  if (stored.watermark === null) return true;
  const storedAt = parseInstant(stored.watermark);
  const committedAt = parseInstant(committed.watermark);
  if (storedAt === null || committedAt === null) return true;
  return toEpochMillis(storedAt) < toEpochMillis(committedAt);
}

/** The error a location fails its page with when a read-back is unrecognised (retriable: read again later). */
export function unrecognisedReadBack(locationUid: string, stored: LocationOffset): RetriableError {
  return new RetriableError(
    'OFFSET_READ_UNRECOGNISED',
    `the offset read back for location ${locationUid} is neither the one last committed nor the page's (a read behind pending transaction markers): not adopted, reading again later`,
    { details: { locationUid, storedSince: stored.since, storedWatermark: stored.watermark } },
  );
}

/**
 * Whether the sink that rejected the page will never commit again (closing, or its partition taken over by
 * another instance): nothing of the page is visible, and retrying on this sink would only hold the location
 * until its removal's bound (a handover would wait for it: issue 20). The page is retried by whoever writes
 * the location next. Sinks mark such rejections with `details.sinkEnded`.
 */
export function sinkEnded(error: unknown): boolean {
  return error instanceof ConnectorError && error.details?.['sinkEnded'] === true;
}

/**
 * Whether a sink's rejection leaves the page's outcome unknown (the sink could not settle a failed commit).
 * Every other rejection means nothing of the page is visible (RecordSink contract).
 */
export function outcomeUnknown(error: unknown): boolean {
  return error instanceof ConnectorError && error.details?.['outcomeUnknown'] === true;
}
