/**
 * What one lane adds to a location's page path (location-sync.ts), so that the path never asks which lane it
 * runs: the live lane (live-lane.ts) and a split location's history lane (history-lane.ts) each fill it in.
 * Types only.
 */
import type { BoundaryBounds, Lane } from './lanes.js';
import type { LaneOffset, LocationOffset, RequestHint } from '../model.js';
import type { AssembledPage, PreparedPage } from '../location/page-pipeline.js';
import type { ListPage } from './group-read.js';
import type { ListedPage, PageRequest } from '../ports.js';
import type { PageAhead, ReadAhead } from '../location/read-ahead.js';
import type { TraversalRun } from '../location/traversal-run.js';

/** A committed page of a lane: what it was listed from and with, and what it published. */
export interface CommittedPage {
  from: LaneOffset;
  request: PageRequest;
  listed: ListedPage;
  prepared: PreparedPage;
  page: AssembledPage;
  /** Calls a history page dropped because the live lane published them newer (live-window.ts). */
  superseded: number;
}

export interface LaneRole {
  readonly lane: Lane;
  /** The lane's next page, listed and prepared while its previous page commits (read-ahead.ts). */
  readonly readAhead: ReadAhead;
  /**
   * How the lane lists the page of `request` from `from` with `list`, both through the same-instant group at
   * the lane's watermark (group-read.ts): the live lane page by page, the pages after the first held for its
   * next pages; the history lane merged into one page, in pieces its boundary, bounded by `bounds` (the
   * page's pipeline's), can hold.
   */
  list(
    list: ListPage,
    request: PageRequest,
    from: LaneOffset,
    bounds: BoundaryBounds,
    signal?: AbortSignal,
  ): Promise<ListedPage>;
  /** The rate limiter's priority of the lane's requests (priority.ts), the location standing at `position`. */
  hint(position: LocationOffset, traversalsCompleted: number): RequestHint;
  /** The live-window mark a page read ahead now carries (live-window.ts); undefined when the lane needs none. */
  aheadMark(): number | undefined;
  /** The lane's page in its turn starts, read ahead (`ahead`) or not (null). */
  pageBegins(ahead: PageAhead | null): void;
  /** The prepared page without what the lane must not publish, and how many calls that left out. */
  keep(prepared: PreparedPage): { kept: PreparedPage; superseded: number };
  /** The lane's page was committed; `offset` is the location's offset now. */
  committed(page: CommittedPage, traversal: TraversalRun, offset: LocationOffset): void;
  /** The lane's traversal completed at `nowMs`, the location's offset then `offset`. */
  traversalEnded(traversal: TraversalRun, nowMs: number, offset: LocationOffset): void;
}
