/**
 * The lanes of a location (issue 23): the present first, history behind it. Pure rules over plain data;
 * the orchestrator (location-sync.ts) does the requests and commits, the scheduler (scheduler.ts) gives live
 * work precedence over history turns.
 *
 * A location with no stored offset, or whose stored position is older than the API's newest change by more
 * than `splitBacklogMs`, is split at an instant T0 taken from the API's own clock: an order=desc listing
 * (location-sync.ts newestUpdatedAt) gives the newest updatedAt U, and T0 = U − `overlapMs` (the overlap absorbs an API whose
 * updatedAt values are not written in order, by up to that much). Then:
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
 *   listed ahead (read-ahead) before that live commit. `LiveWindow` remembers what the live lane published
 *   since the oldest history page in flight was listed; the history page drops a call the live lane
 *   published since at a newer updatedAt (`superseded_by_live`). Memory is bounded by the pages in flight.
 * - After a crash nothing in memory is needed: the listing no longer shows a changed call below T0.
 */
import { LIVE_SINCE_WINDOW_MS } from './priority.js';
import { compareInstants, parseInstant, toEpochMillis, type Instant } from '../time/instant.js';
import type { LaneOffset, LocationOffset } from './model.js';
import { boundaryEntryBytes, type Positioned } from './traversal.js';

export interface LaneSettings {
  /** false: a location is never split (one lane, as before lanes). */
  enabled: boolean;
  /** T0 = the API's newest updatedAt minus this (ms, >= 0). */
  overlapMs: number;
  /** A stored position older than the newest change by more than this (ms) is split; 0 = never split. */
  splitBacklogMs: number;
  /**
   * `limit` of the history lane's pages (at most api.pageSize). Pages are read in the background (the
   * scheduler's nextBackfill) and committed in short turns; short pages keep the page a turn commits, and what
   * waits in memory, small. Unset: api.pageSize.
   */
  historyPageSize?: number;
}

export type Lane = 'live' | 'history';

export const DEFAULT_LANE_SETTINGS: Readonly<LaneSettings> = Object.freeze({
  enabled: true,
  overlapMs: 60_000,
  splitBacklogMs: 3_600_000,
  historyPageSize: 20,
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
 * History continues from the stored offset (`startSince` when nothing is stored); live starts at T0.
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
): LocationOffset | null {
  if (!settings.enabled || settings.splitBacklogMs <= 0 || offset.history !== undefined || newest === null)
    return null;
  const until = splitInstant(newest, settings.overlapMs);
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
  const inherited = liveLane(offset);
  const history = bounds === undefined ? inherited : boundedLane(inherited, splitBoundaryBounds(bounds));
  return {
    since: until,
    cursor: null,
    watermark: null,
    boundary: [],
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
  if (lane === 'live') {
    const live = liveLane(next);
    return committed.history === undefined ? live : { ...live, history: committed.history };
  }
  const history = committed.history;
  if (history === undefined) throw new Error('a history page of a location that is not split');
  const live = liveLane(committed);
  return complete ? live : { ...live, history: { ...liveLane(next), until: history.until } };
}

/**
 * What the live lane published since the oldest history page in flight was listed: per uid, the newest
 * updatedAt and the sequence number of its commit. A history page carries the sequence number taken when
 * its listing was requested (`mark`) and drops every call the live lane published after that at a newer
 * updatedAt (`supersededByLive`). `prune` forgets what no page in flight can need.
 */
export class LiveWindow {
  private seq = 0;
  private readonly published = new Map<string, { at: Instant; seq: number }>();

  /** The sequence number to carry with a history listing requested now. */
  mark(): number {
    return this.seq;
  }

  /** A live page committed these calls (in its order). */
  record(calls: readonly { uid: string; updatedAt: string }[]): void {
    if (calls.length === 0) return;
    this.seq += 1;
    for (const call of calls) {
      const at = parseInstant(call.updatedAt);
      if (at === null) continue;
      const known = this.published.get(call.uid);
      if (known === undefined || compareInstants(at, known.at) >= 0)
        this.published.set(call.uid, { at, seq: this.seq });
    }
  }

  /** Whether the live lane published `uid` after `mark` at an updatedAt newer than `updatedAt`. */
  supersededByLive(uid: string, updatedAt: string, mark: number): boolean {
    const known = this.published.get(uid);
    if (known === undefined || known.seq <= mark) return false;
    const at = parseInstant(updatedAt);
    return at === null || compareInstants(known.at, at) > 0;
  }

  /** Forgets what was published at or before `oldestMark` (the oldest history page in flight), or all when none is. */
  prune(oldestMark: number | null): void {
    if (oldestMark === null) {
      this.published.clear();
      return;
    }
    for (const [uid, entry] of this.published) if (entry.seq <= oldestMark) this.published.delete(uid);
  }

  /** Entries kept (for tests and bounds). */
  get size(): number {
    return this.published.size;
  }
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
    history: { since: to, cursor: null, watermark: null, boundary: [], until: history.until },
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

/**
 * A split location's backfill as this process saw it: T0, the history lane's position (its watermark, else
 * its since; null while neither is known), where that position was when this process first saw the lane, and
 * the records the history lane published since. Times in ms since the epoch.
 */
export interface BackfillFigures {
  untilMs: number;
  positionMs: number | null;
  startedAtMs: number;
  startPositionMs: number | null;
  records: number;
}

/** How far a backfill has to go: API time left to read, the rate it is read at so far, and the ETA at that rate. */
export interface BackfillProgress {
  /** Seconds of API time between the history lane's position and T0; null while the position is unknown. */
  remainingSeconds: number | null;
  /** Seconds of API time read per second since this process first saw the lane; null before any progress. */
  rate: number | null;
  /** remainingSeconds / rate: the ETA if the budget the live lanes leave stays as it has been. */
  etaSeconds: number | null;
}

/** The history lane's position as ms since the epoch (its watermark, else its since), or null. */
export function historyPositionMs(history: LaneOffset): number | null {
  const text = history.watermark ?? history.since;
  const at = text === null ? null : parseInstant(text);
  return at === null ? null : toEpochMillis(at);
}

export function backfillProgress(figures: BackfillFigures, nowMs: number): BackfillProgress {
  const { positionMs, startPositionMs, startedAtMs, untilMs } = figures;
  if (positionMs === null) return { remainingSeconds: null, rate: null, etaSeconds: null };
  const remainingSeconds = Math.max(0, untilMs - positionMs) / 1000;
  const elapsed = nowMs - startedAtMs;
  const read = startPositionMs === null ? null : positionMs - startPositionMs;
  const rate = read === null || read <= 0 || elapsed <= 0 ? null : read / elapsed;
  return { remainingSeconds, rate, etaSeconds: rate === null ? null : remainingSeconds / rate };
}
