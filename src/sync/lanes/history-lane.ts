/**
 * A split location's second lane (lanes.ts), one object in the shape of Debezium's incremental snapshot: its
 * own state beside the position it shares with the live lane in the one offset record (LocationSync keeps
 * that), notified by the live lane, never asked about inside the page path:
 * - the split: whether this process splits the location (split-check.ts);
 * - the live window (live-window.ts): what the live lane published while a history page is in flight, and
 *   the marks of those pages (the one in its turn, the one read ahead), so a history page drops a call the
 *   live lane published newer since its listing;
 * - the backfill figures (backfill.ts), in step with the lane's position, and their metrics;
 * - the prefetch: its read-ahead, which the scheduler asks about (historyAhead) and starts between turns;
 * - its listing: a page reads through the same-instant group at the lane's watermark (group-read.ts), so
 *   cursors that expire while pages wait for their turns cannot keep the lane from T0.
 */
import {
  backfillFiguresAfter,
  backfillProgress,
  startsBackfill,
  type BackfillFigures,
  type BackfillProgress,
} from './backfill.js';
import type { CommittedPage, LaneRole } from './lane-role.js';
import type { LocationCounters } from '../location/location-counters.js';
import { logHistoryPage, logLanesMerged } from '../location/location-log.js';
import { LiveWindow, withoutSupersededByLive } from './live-window.js';
import { listThroughGroup, type ListPage } from './group-read.js';
import { DEFAULT_GROUP_PIECE_SIZE, type BoundaryBounds } from './lanes.js';
import type { LaneOffset, LocationOffset, RequestHint } from '../model.js';
import type { PreparedPage } from '../location/page-pipeline.js';
import type { ListedPage, PageRequest, SyncMetrics } from '../ports.js';
import { BACKFILL_HINT } from '../location/priority.js';
import { ReadAhead, type AheadState, type KeepFresh, type PageAhead } from '../location/read-ahead.js';
import { SplitCheck, type SplitCheckOptions } from './split-check.js';
import type { TraversalRun } from '../location/traversal-run.js';

export interface HistoryLaneOptions extends SplitCheckOptions {
  counters: Pick<LocationCounters, 'historyPublished'>;
  metrics: Pick<SyncMetrics, 'observeBackfill'>;
  /** How the page read ahead is kept committable while it waits for its turn (page-reading.ts keepingFresh). */
  keepFresh?: KeepFresh | undefined;
}

export class HistoryLane implements LaneRole {
  readonly lane = 'history';
  readonly readAhead: ReadAhead;
  private readonly window = new LiveWindow();
  /** The live window's mark of the history page in its turn, null when none is. */
  private mark: number | null = null;
  /** The backfill as this process saw it, while the location is split (metrics, status). */
  private figures: BackfillFigures | null = null;
  private readonly splitCheck: SplitCheck;

  constructor(private readonly options: HistoryLaneOptions) {
    this.splitCheck = new SplitCheck(options);
    this.readAhead = new ReadAhead(options.keepFresh);
  }

  /** Whether this process decided the location's split already (split() then asks nothing). */
  get splitDecided(): boolean {
    return this.splitCheck.decided;
  }

  /** The location's offset was replaced (a reset signal): its split is decided again before its next page. */
  offsetReplaced(): void {
    this.splitCheck.again();
  }

  /**
   * The location's offset split at T0 when this process's split check says so (split-check.ts), else null;
   * a split starts the backfill figures.
   */
  async split(position: LocationOffset, signal?: AbortSignal): Promise<LocationOffset | null> {
    const split = await this.splitCheck.decide(position, signal);
    if (split !== null) this.track(split, 0);
    return split;
  }

  /** The lane's next page as read ahead from the location's `position` (LocationSync.historyAhead). */
  ahead(position: LocationOffset): AheadState {
    const history = position.history;
    if (history === undefined) return { state: 'none' };
    return this.readAhead.stateFrom(history);
  }

  /** The backfill as this process saw it, with its progress at `nowMs`; null when the location is not split. */
  backfill(nowMs: number): (BackfillFigures & BackfillProgress) | null {
    const figures = this.figures;
    return figures === null ? null : { ...figures, ...backfillProgress(figures, nowMs) };
  }

  /**
   * Keeps the backfill figures (and the metrics' copy) in step with the location's `offset`: a new history
   * lane (or T0) starts them, `records` more published by the history lane move them, a merge ends them.
   */
  track(offset: LocationOffset, records: number): void {
    const { metrics, counters, clock, locationUid } = this.options;
    const known = this.figures;
    const figures = backfillFiguresAfter(known, offset.history, records, clock.now());
    this.figures = figures;
    if (figures === null) {
      if (known !== null) metrics.observeBackfill(locationUid, null);
      return;
    }
    if (startsBackfill(known, figures)) counters.historyPublished(0);
    metrics.observeBackfill(locationUid, figures);
  }

  /** The live lane committed `calls`: remembered while a history page is in flight (listed, not committed). */
  liveCommitted(calls: readonly { uid: string; updatedAt: string }[]): void {
    if (this.mark !== null || this.readAhead.mark !== undefined) this.window.record(calls);
  }

  /** The location's page in its turn ended: the live window forgets what no history page in flight needs. */
  pageEnded(): void {
    if (this.mark === null) return;
    this.mark = null;
    this.window.prune(this.readAhead.mark ?? null);
  }

  /**
   * A history page reads through the same-instant group at its watermark, in pieces of
   * lanes.groupPieceSize calls while `bounds` hold the group (group-read.ts: why).
   */
  list(
    list: ListPage,
    request: PageRequest,
    from: LaneOffset,
    bounds: BoundaryBounds,
    signal?: AbortSignal,
  ): Promise<ListedPage> {
    const calls = this.options.lanes?.groupPieceSize ?? DEFAULT_GROUP_PIECE_SIZE;
    return listThroughGroup(list, request, from, { calls, bounds }, signal);
  }

  hint(): RequestHint {
    return BACKFILL_HINT;
  }

  aheadMark(): number {
    return this.window.mark();
  }

  /** The page in its turn carries the mark of its listing: taken when read ahead, else now. */
  pageBegins(ahead: PageAhead | null): void {
    this.mark = ahead?.mark ?? this.window.mark();
  }

  keep(prepared: PreparedPage): { kept: PreparedPage; superseded: number } {
    if (this.mark === null) return { kept: prepared, superseded: 0 };
    return withoutSupersededByLive(prepared, this.window, this.mark);
  }

  committed(committed: CommittedPage, traversal: TraversalRun, offset: LocationOffset): void {
    const records = committed.page.calls.length;
    if (records > 0) this.options.counters.historyPublished(records);
    this.track(offset, records);
    logHistoryPage(this.options.logger, traversal, committed);
  }

  traversalEnded(traversal: TraversalRun, nowMs: number): void {
    logLanesMerged(traversal, nowMs);
  }
}
