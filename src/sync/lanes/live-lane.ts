/**
 * The live lane's part in a location's page path (lane-role.ts): the offset's own fields, the only lane of a
 * location that is not split. Its pages publish what they list; a commit notifies the history lane of what
 * it published (live-window.ts), and a completed traversal is a poll done (metrics, status, its log line).
 */
import type { Logger } from '../../logging/logger.js';
import type { Clock } from '../../time/clock.js';
import type { CommittedPage, LaneRole } from './lane-role.js';
import type { LocationCounters } from '../location/location-counters.js';
import { logTraversalComplete } from '../location/location-log.js';
import { listGroupPages, type ListPage } from './group-read.js';
import { ListedPages } from './listed-pages.js';
import type { BoundaryBounds } from './lanes.js';
import type { LaneOffset, LocationOffset, RequestHint } from '../model.js';
import type { PreparedPage } from '../location/page-pipeline.js';
import type { ListedPage, PageRequest } from '../ports.js';
import { LIVE_HINT, requestHint } from '../location/priority.js';
import { ReadAhead } from '../location/read-ahead.js';
import type { TraversalRun } from '../location/traversal-run.js';

/**
 * The call versions a committed live page settled: its calls, then its tombstones at the version they were
 * listed at (the enriched item of that uid: one per uid on a page).
 */
export function settledVersions(
  committed: Pick<CommittedPage, 'page' | 'prepared'>,
): { uid: string; updatedAt: string }[] {
  const { page, prepared } = committed;
  if (page.tombstones.length === 0) return page.calls;
  const gone = new Set(page.tombstones);
  const tombstoned = prepared.enriched.filter((item) => gone.has(item.listed.uid)).map((item) => item.listed);
  return [...page.calls, ...tombstoned];
}

/** Who hears of the calls a live page committed: a split location's history lane (HistoryLane). */
export interface LiveListener {
  liveCommitted(calls: readonly { uid: string; updatedAt: string }[]): void;
}

export interface LiveLaneOptions {
  listener: LiveListener;
  /** Calls new to the boundary a listing through a same-instant group holds (lanes.groupPieceSize). */
  groupPieceSize: number;
  counters: Pick<LocationCounters, 'traversalCompleted'>;
  logger: Logger;
  clock: Clock;
}

export class LiveLane implements LaneRole {
  readonly lane = 'live';
  readonly readAhead = new ReadAhead();
  private readonly listedAhead = new ListedPages();

  constructor(private readonly options: LiveLaneOptions) {}

  /**
   * A live page: listed ahead through a same-instant group when the page before it was (or when it is a
   * retry of such a page), else listed now, through the group at its watermark page by page (group-read.ts
   * listGroupPages): the pages after the first are held for the pages after this one (listed-pages.ts),
   * unless this listing was cancelled.
   */
  async list(
    list: ListPage,
    request: PageRequest,
    from: LaneOffset,
    _bounds: BoundaryBounds,
    signal?: AbortSignal,
  ): Promise<ListedPage> {
    const held = this.listedAhead.take(request);
    if (held !== null) return held;
    const pages = await listGroupPages(list, request, from, this.options.groupPieceSize, signal);
    if (pages.length > 1 && signal?.aborted !== true) this.listedAhead.hold(pages.slice(1));
    return pages[0].listed;
  }

  /** A split location's live lane is live; a location that is not split is live once caught up (priority.ts). */
  hint(position: LocationOffset, traversalsCompleted: number): RequestHint {
    if (position.history !== undefined) return LIVE_HINT;
    return requestHint(traversalsCompleted, position.since, this.options.clock.now());
  }

  aheadMark(): undefined {
    return undefined;
  }

  pageBegins(): void {}

  keep(prepared: PreparedPage): { kept: PreparedPage; superseded: number } {
    return { kept: prepared, superseded: 0 };
  }

  /**
   * The live lane's page committed: the history lane hears of every version it settled, the calls published
   * and the tombstones (a call GET found gone, kafka.tombstoneGoneCalls): a history page listed before must
   * not publish an older version over a tombstone either (it would bring a deleted call back for good).
   */
  committed(committed: CommittedPage): void {
    this.options.listener.liveCommitted(settledVersions(committed));
  }

  /** A poll done: counted as caught up only when no history lane is left behind it (LocationTotals). */
  traversalEnded(traversal: TraversalRun, nowMs: number, offset: LocationOffset): void {
    this.options.counters.traversalCompleted(traversal.startedAt, nowMs, offset.history === undefined);
    logTraversalComplete(this.options.logger, traversal, offset.since, nowMs);
  }
}
