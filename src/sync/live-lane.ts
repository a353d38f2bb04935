/**
 * The live lane's part in a location's page path (lane-role.ts): the offset's own fields, the only lane of a
 * location that is not split. Its pages publish what they list; a commit notifies the history lane of what
 * it published (live-window.ts), and a completed traversal is a poll done (metrics, status, its log line).
 */
import type { Logger } from '../logging/logger.js';
import type { Clock } from '../time/clock.js';
import type { CommittedPage, LaneRole } from './lane-role.js';
import type { LocationCounters } from './location-counters.js';
import { logTraversalComplete } from './location-log.js';
import type { LocationOffset, RequestHint } from './model.js';
import type { PreparedPage } from './page-pipeline.js';
import { LIVE_HINT, requestHint } from './priority.js';
import { ReadAhead } from './read-ahead.js';
import type { TraversalRun } from './traversal-run.js';

/** Who hears of the calls a live page committed: a split location's history lane (HistoryLane). */
export interface LiveListener {
  liveCommitted(calls: readonly { uid: string; updatedAt: string }[]): void;
}

export interface LiveLaneOptions {
  listener: LiveListener;
  counters: Pick<LocationCounters, 'traversalCompleted'>;
  logger: Logger;
  clock: Clock;
}

export class LiveLane implements LaneRole {
  readonly lane = 'live';
  readonly readAhead = new ReadAhead();

  constructor(private readonly options: LiveLaneOptions) {}

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

  committed(committed: CommittedPage): void {
    this.options.listener.liveCommitted(committed.page.calls);
  }

  /** A poll done: counted as caught up only when no history lane is left behind it (LocationTotals). */
  traversalEnded(traversal: TraversalRun, nowMs: number, offset: LocationOffset): void {
    this.options.counters.traversalCompleted(traversal.startedAt, nowMs, offset.history === undefined);
    logTraversalComplete(this.options.logger, traversal, offset.since, nowMs);
  }
}
