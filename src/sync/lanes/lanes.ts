/**
 * The lanes of a location: the present first, history behind it. Pure rules over plain data: the
 * split, each lane's position, bounds, pipeline and traversal settings, and the offset after a lane's page.
 * The split check (split-check.ts) asks the API for T0, the history lane (history-lane.ts) keeps what the
 * second lane needs besides its position, the orchestrator (location-sync.ts) does the requests and
 * commits, the scheduler (scheduler.ts) gives live work precedence over history turns.
 *
 * A location with no stored offset, or whose stored position is older than the API's newest change by more
 * than `splitBacklogMs`, is split at an instant T0 taken from the API's own clock: an order=desc listing
 * (split-check.ts probeSplit) gives the newest updatedAt U, and T0 is the first updatedAt it lists at or before
 * U − `overlapMs` (the overlap absorbs an API whose updatedAt values are not written in order, by up to that
 * much), kept exactly as the API wrote it: the live lane sends it back as `since`, and an API may refuse a
 * date-time in a form it does not write itself (the connector's own toISOString, say). Then:
 * - the live lane (the offset's own fields) lists `since = T0` ascending, a fresh traversal, and is polled
 *   every interval like any caught-up location, its requests at the rate limiter's `live` priority;
 * - the history lane (`offset.history`) continues from the stored offset (or `startSince`) and lists
 *   ascending up to `until = T0`, exclusive, at `backfill` priority, in the budget the live lanes leave.
 *   Items it lists at or after T0 are the live lane's: it drops them (`historyRange`). The ranges are
 *   disjoint and together cover everything, so neither lane publishes what the other does.
 * - The history lane is done when a page reaches an item at or after T0, or its listing ends
 *   (nextCursor null). The commit of that page removes `history` from the offset: the lanes merge.
 *
 * No version of a call goes backwards (a read_committed consumer and the compacted topic end on the newest):
 * - The listing shows every call at its current updatedAt. A call changed after T0 is listed by the live lane
 *   only; history lists it below T0 only if its listing was made before the change.
 * - Such a history page can commit after the live lane published the newer version only when it was
 *   listed ahead (read-ahead) before that live commit. `LiveWindow` (live-window.ts) remembers what the live lane published
 *   since the oldest history page in flight was listed; the history page drops a call the live lane
 *   published since at a newer updatedAt (`superseded_by_live`). Memory is bounded by the pages in flight.
 * - After a crash nothing in memory is needed: the listing no longer shows a changed call below T0.
 */
import { compareInstants, parseInstant, toEpochMillis, type Instant } from '../../time/instant.js';
import type { LaneOffset, LocationOffset } from '../model.js';
import { LIVE_SINCE_WINDOW_MS } from '../location/priority.js';
import {
  boundaryEntryBytes,
  restartAfterInvalidCursor,
  type Positioned,
  type TraversalSettings,
} from '../location/traversal.js';

export interface LaneSettings {
  /** false: a location is never split (one lane, as before lanes). */
  enabled: boolean;
  /** T0: the first updatedAt the API lists at or before its newest minus this (ms, >= 0), as written. */
  overlapMs: number;
  /** A stored position older than the newest change by more than this (ms) is split; 0 = never split. */
  splitBacklogMs: number;
  /**
   * `limit` of the history lane's pages (at most api.pageSize). Pages are read in the background (the backfill
   * queue, backfill-queue.ts) and committed in short turns; short pages keep the page a turn commits, and what
   * waits in memory, small. Unset: api.pageSize.
   */
  historyPageSize?: number;
  /**
   * Calls of a same-instant group one history page publishes, and a live lane lists ahead (group-read.ts),
   * while the lane's boundary can hold the group: a bulk import at one instant is read in pieces of this size.
   * Unset: DEFAULT_GROUP_PIECE_SIZE.
   */
  groupPieceSize?: number;
}

/** lanes.groupPieceSize's default: a piece's listed calls and answers are a few MB at most. */
export const DEFAULT_GROUP_PIECE_SIZE = 1_000;

export type Lane = 'live' | 'history';

export const DEFAULT_LANE_SETTINGS: Readonly<LaneSettings> = Object.freeze({
  enabled: true,
  overlapMs: 60_000,
  splitBacklogMs: 3_600_000,
  historyPageSize: 20,
  groupPieceSize: DEFAULT_GROUP_PIECE_SIZE,
});

function instantOf(text: string): Instant {
  const instant = parseInstant(text);
  if (instant === null) throw new RangeError(`not an RFC 3339 date-time: ${text}`);
  return instant;
}

/** The location's live lane alone (the offset without its history). */
export function liveLane(offset: LocationOffset): LaneOffset {
  const { history: _history, ...live } = offset;
  return live;
}

/** Whether the offset is a location's first: nothing stored (or reset). */
function isUnstarted(offset: LaneOffset): boolean {
  return offset.since === null && offset.cursor === null && offset.watermark === null;
}

/**
 * Whether a location's split is worth the check request (an order=desc listing, usually one request):
 * lanes on, not split already, and not recently caught up. A location whose since is within
 * min(LIVE_SINCE_WINDOW_MS, splitBacklogMs) of now cannot have a backlog above the threshold.
 */
export function needsSplitCheck(offset: LocationOffset, settings: LaneSettings, nowMs: number): boolean {
  if (!settings.enabled || settings.splitBacklogMs <= 0 || offset.history !== undefined) return false;
  if (offset.since === null) return true;
  const since = parseInstant(offset.since);
  if (since === null) return true;
  const age = nowMs - toEpochMillis(since);
  return age > Math.min(LIVE_SINCE_WINDOW_MS, settings.splitBacklogMs);
}

/** T0: `newest` (the API's newest updatedAt) less the overlap, at millisecond precision, never after `newest`. */
export function splitInstant(newest: string, overlapMs: number): string {
  if (!(overlapMs >= 0)) throw new RangeError('overlapMs must be >= 0');
  return new Date(toEpochMillis(instantOf(newest)) - overlapMs).toISOString();
}

/**
 * The offset of a location split at the API's newest updatedAt `newest` (null: the location has no call at
 * all), or null when it needs no split: lanes off, split already, no call, a backlog under the threshold,
 * or nothing before T0 to read (a position or `startSince` at or after it).
 * History continues from the stored offset (`startSince` when nothing is stored); live starts at T0: `until`,
 * an updatedAt as the API wrote it at or before `newest` − overlapMs (split-check.ts probeSplit), else
 * (tests) splitInstant's.
 * `bounds`, the location's boundary bounds (one lane's): the boundary the history lane inherits is cut to
 * what a split location's history may hold beside a live lane (splitBoundaryBounds), so the first record
 * holding both lanes fits the offsets topic like every later one.
 */
export function splitOffset(
  offset: LocationOffset,
  newest: string | null,
  settings: LaneSettings,
  startSince: string | null,
  bounds?: BoundaryBounds,
  at?: string,
): LocationOffset | null {
  if (!settings.enabled || settings.splitBacklogMs <= 0 || offset.history !== undefined || newest === null)
    return null;
  const until = at ?? splitInstant(newest, settings.overlapMs);
  const untilInstant = instantOf(until);
  const position = isUnstarted(offset) ? startSince : (offset.watermark ?? offset.since);
  if (position !== null) {
    const at = instantOf(position);
    if (compareInstants(at, untilInstant) >= 0) return null;
    if (
      !isUnstarted(offset) &&
      toEpochMillis(instantOf(newest)) - toEpochMillis(at) <= settings.splitBacklogMs
    )
      return null;
  }
  const inherited = lanePosition(offset);
  const history = bounds === undefined ? inherited : boundedLane(inherited, splitBoundaryBounds(bounds));
  return {
    since: until,
    cursor: null,
    watermark: null,
    boundary: [],
    ...(offset.signal !== undefined && { signal: offset.signal }),
    history: { ...history, boundary: [...history.boundary], until },
  };
}

/** A lane's boundary bounds: at most `boundaryCap` uids and, when set, `boundaryMaxBytes` bytes (traversal.ts). */
export interface BoundaryBounds {
  boundaryCap: number;
  boundaryMaxBytes?: number;
}

/**
 * What the history lane may keep of the boundary it inherits at a split: the location's bounds less the
 * live lane's fields (SECOND_LANE_RESERVED_BYTES) and the least the live lane is always left
 * (laneBoundaryBounds: one uid, 1 KiB).
 */
export function splitBoundaryBounds(bounds: BoundaryBounds): BoundaryBounds {
  const boundaryCap = Math.max(1, bounds.boundaryCap - 1);
  if (bounds.boundaryMaxBytes === undefined) return { boundaryCap };
  return {
    boundaryCap,
    boundaryMaxBytes: Math.max(1024, bounds.boundaryMaxBytes - SECOND_LANE_RESERVED_BYTES - 1024),
  };
}

/**
 * `lane` with its boundary cut to `bounds`: entries are kept in order while they fit, and a cut sets
 * boundaryOverflow, as applyPage does past its bounds (traversal.ts): the uids cut are published again when
 * that instant is read again, so a cut may double records, never lose one. A lane within bounds is returned as is.
 */
export function boundedLane(lane: LaneOffset, bounds: BoundaryBounds): LaneOffset {
  const fingerprints = lane.boundaryFingerprints ?? {};
  const kept: string[] = [];
  let bytes = 0;
  for (const uid of lane.boundary) {
    const entry = boundaryEntryBytes(uid, fingerprints[uid]);
    if (kept.length >= bounds.boundaryCap || bytes + entry > (bounds.boundaryMaxBytes ?? Infinity)) break;
    kept.push(uid);
    bytes += entry;
  }
  if (kept.length === lane.boundary.length) return lane;
  const { boundaryFingerprints, ...rest } = lane;
  const keptFingerprints = Object.fromEntries(
    kept.flatMap((uid) => (fingerprints[uid] === undefined ? [] : [[uid, fingerprints[uid]]])),
  );
  return {
    ...rest,
    boundary: kept,
    boundaryOverflow: true,
    ...(boundaryFingerprints !== undefined && { boundaryFingerprints: keptFingerprints }),
  };
}

/**
 * A history page's entries split at `until`: those before it (the history lane's), and whether the page
 * reached it (an entry at or after `until`: the history lane is done, the rest is the live lane's).
 */
export function historyRange<T extends Positioned>(
  entries: readonly T[],
  until: string,
): { below: T[]; reached: boolean; leftToLive: number } {
  const limit = instantOf(until);
  const below = entries.filter((e) => compareInstants(instantOf(e.updatedAt), limit) < 0);
  const leftToLive = entries.length - below.length;
  return { below, reached: leftToLive > 0, leftToLive };
}

/**
 * The offset after a committed page of `lane`: that lane's new position (`next`, from applyPage), the other
 * lane's as committed. A history page that completed (`complete`) removes the history lane: the lanes merge.
 */
export function offsetAfterPage(
  committed: LocationOffset,
  lane: Lane,
  next: LaneOffset,
  complete: boolean,
): LocationOffset {
  const signal = committed.signal === undefined ? {} : { signal: committed.signal };
  if (lane === 'live') {
    const live = { ...lanePosition(next), ...signal };
    return committed.history === undefined ? live : { ...live, history: committed.history };
  }
  const history = committed.history;
  if (history === undefined) throw new Error('a history page of a location that is not split');
  const live = liveLane(committed);
  if (complete) return live;
  const backfill = history.signal === undefined ? {} : { signal: history.signal };
  return { ...live, history: { ...lanePosition(next), until: history.until, ...backfill } };
}

/** A lane's own position fields: a LaneOffset without the location's (history, signal) or the lane's extras. */
function lanePosition(lane: LaneOffset): LaneOffset {
  const { since, cursor, watermark, boundary, boundaryOverflow, boundaryFingerprints } = lane;
  return {
    since,
    cursor,
    watermark,
    boundary,
    ...(boundaryOverflow !== undefined && { boundaryOverflow }),
    ...(boundaryFingerprints !== undefined && { boundaryFingerprints }),
  };
}

/**
 * `offsets reset --history`: the offset with its history lane started over, live lane and T0 unchanged;
 * from `to` (inclusive) when given, else from the start (`startSince` or the beginning). A `to` at or after
 * T0 leaves no history to read: the lane is removed (the lanes merged, what was before T0 and not yet read
 * is skipped). null when the offset has no history lane.
 */
export function resetHistory(offset: LocationOffset, to: string | null): LocationOffset | null {
  const history = offset.history;
  if (history === undefined) return null;
  if (to !== null && compareInstants(instantOf(to), instantOf(history.until)) >= 0) return liveLane(offset);
  return {
    ...liveLane(offset),
    history: {
      since: to,
      cursor: null,
      watermark: null,
      boundary: [],
      until: history.until,
      ...(history.signal !== undefined && { signal: history.signal }),
    },
  };
}

/**
 * What a second lane adds to the stored offset besides its boundary: its cursor (up to 4,096 characters,
 * JSON-escaped UTF-8), since, watermark, until and the keys. The offset's byte budget (offset-size.ts)
 * reserves room for one lane's; a split location's boundaries share the rest.
 */
export const SECOND_LANE_RESERVED_BYTES = 20 * 1024;

/**
 * The boundary bounds of one lane of a split location: the location's cap and byte budget less what the
 * other lane's boundary holds (and, for bytes, the second lane's other fields), so the one offset record
 * holding both lanes fits what the first lane alone was allowed. A location that is not split keeps its own.
 */
export function laneBoundaryBounds(bounds: BoundaryBounds, other: LaneOffset): BoundaryBounds {
  const boundaryCap = Math.max(1, bounds.boundaryCap - other.boundary.length);
  if (bounds.boundaryMaxBytes === undefined) return { boundaryCap };
  let used = SECOND_LANE_RESERVED_BYTES;
  for (const uid of other.boundary) used += boundaryEntryBytes(uid, other.boundaryFingerprints?.[uid]);
  return { boundaryCap, boundaryMaxBytes: Math.max(1024, bounds.boundaryMaxBytes - used) };
}

/** The position of `lane` in a location's offset: the live lane's fields, or the history lane. */
export function laneOffset(offset: LocationOffset, lane: Lane): LaneOffset {
  if (lane === 'live') return offset;
  const history = offset.history;
  if (history === undefined) throw new Error('a history page of a location that is not split');
  return history;
}

/** Whether the offset has `lane`: the live lane always, the history lane while the location is split. */
export function hasLane(offset: LocationOffset, lane: Lane): boolean {
  return lane === 'live' || offset.history !== undefined;
}

/**
 * What a lane's read-ahead from `offset` is keyed by (ReadAhead compares it by identity): the live lane's, the
 * whole offset (any commit moves it); the history lane's, its own object, which a live commit keeps.
 */
export function readAheadKey(offset: LocationOffset, lane: Lane): LocationOffset {
  return lane === 'live' ? offset : (offset.history ?? offset);
}

/**
 * The pipeline settings of `lane`'s pages from `offset`: a split location's lanes share the boundary bounds
 * (laneBoundaryBounds), and the history lane stops at T0 (`until`). A location that is not split keeps `base`.
 */
export function lanePipeline<Settings extends BoundaryBounds>(
  base: Settings,
  offset: LocationOffset,
  lane: Lane,
): Settings & { until?: string } {
  const history = offset.history;
  if (history === undefined) return base;
  const other = lane === 'live' ? history : liveLane(offset);
  return {
    ...base,
    ...laneBoundaryBounds(base, other),
    ...(lane === 'history' && { until: history.until }),
  };
}

/** The traversal settings of `lane`'s pages: history pages list `historyPageSize` items at most. */
export function laneTraversal(
  base: TraversalSettings,
  lane: Lane,
  historyPageSize: number | undefined,
): TraversalSettings {
  if (lane === 'live' || historyPageSize === undefined) return base;
  return { ...base, pageSize: Math.min(base.pageSize, historyPageSize) };
}

/** The offset after `lane`'s cursor was rejected: that lane restarts from its watermark (traversal.ts), T0 kept. */
export function restartLane(offset: LocationOffset, lane: Lane): LocationOffset {
  const history = offset.history;
  if (lane === 'live' || history === undefined) return restartAfterInvalidCursor(offset);
  return { ...offset, history: { ...restartAfterInvalidCursor(history), until: history.until } };
}
