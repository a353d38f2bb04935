/**
 * The counting of one location: its metrics (SyncMetrics, labelled by the location), its totals since the
 * process started (the status view) and the counts of the traversal in progress (its 'traversal complete'
 * line). Nothing here decides anything; LocationSync calls it once a page's turn is over.
 */
import { parseInstant, toEpochMillis } from '../../time/instant.js';
import type { Lane } from '../lanes/lanes.js';
import type { PageTally } from './page-pipeline.js';
import type { SyncMetrics } from '../ports.js';

/** Counts since this LocationSync was created (the process started), for the status view. */
export interface LocationTotals {
  pages: number;
  published: number;
  deadLettered: number;
  deduplicated: number;
  redacted: number;
  belowWatermark: number;
  /**
   * Traversals that completed with the location caught up: a split location's live lane (lanes.ts) counts
   * only once its history lane has merged, so "a traversal completed" still means "nothing older is left".
   */
  traversalsCompleted: number;
  /**
   * When the last completed live poll began (ms since epoch), null before one completed: every change made
   * before it is committed, so now minus it is the location's lag (the status view, the lag gauge).
   */
  caughtUpAt: number | null;
}

/** Totals of a location that has done nothing yet. */
export function emptyTotals(): LocationTotals {
  return {
    pages: 0,
    published: 0,
    deadLettered: 0,
    deduplicated: 0,
    redacted: 0,
    belowWatermark: 0,
    traversalsCompleted: 0,
    caughtUpAt: null,
  };
}

/** The counts of one traversal, for its 'traversal complete' line, and its lane (TraversalRun). */
export interface TraversalCounts {
  readonly lane: Lane;
  pages: number;
  published: number;
  deadLettered: number;
  deduplicated: number;
}

export class LocationCounters {
  readonly totals: LocationTotals = emptyTotals();
  private readonly location: string;
  /** This location's counters incremented on every page (idle polls included), looked up once. */
  private readonly pagesFetched: { inc(value?: number): void };
  private readonly recordsPublished: { inc(value?: number): void };
  /** The boundary call an idle poll lists again and skips: counted on nearly every poll. */
  private readonly boundaryDeduplicated: { inc(value?: number): void };
  /** The watermark last given to metrics.observeHighWater. */
  private observedWatermark: string | null = null;

  constructor(
    private readonly metrics: SyncMetrics,
    private readonly locationUid: string,
  ) {
    this.location = metrics.location(locationUid);
    this.pagesFetched = metrics.pagesFetched.labels({ location: this.location });
    this.recordsPublished = metrics.recordsPublished.labels({ location: this.location });
    this.boundaryDeduplicated = metrics.recordsSkipped.labels({
      location: this.location,
      reason: 'boundary_dedupe',
    });
  }

  /** A page was listed (fetched) for `traversal`. */
  pageFetched(traversal: TraversalCounts): void {
    this.pagesFetched.inc();
    traversal.pages += 1;
  }

  /**
   * A page's turn is over (committed, or idle); `watermark`: the location's committed one now. Called once the
   * page is stored, so the delay of each change it published (`page.updatedAt`) is observed at its commit.
   */
  recordPage(traversal: TraversalCounts, page: PageTally, watermark: string | null): void {
    const { metrics, location } = this;
    this.recordsPublished.inc(page.published);
    if (page.updatedAt.length > 0)
      metrics.observeCommittedChanges(traversal.lane, committedAt(page.updatedAt));
    if (page.deduplicated > 0) this.boundaryDeduplicated.inc(page.deduplicated);
    if (page.supersededByLive > 0)
      metrics.recordsSkipped.inc({ location, reason: 'superseded_by_live' }, page.supersededByLive);
    if (page.deadLetters.length > 0)
      metrics.recordsSkipped.inc({ location, reason: 'dlq' }, page.deadLetters.length);
    if (page.redacted > 0) metrics.recordsRedacted.inc({ location }, page.redacted);
    if (page.belowWatermark > 0) metrics.recordsBelowWatermark.inc({ location }, page.belowWatermark);
    for (const dl of page.deadLetters) metrics.deadLetters.inc({ code: dl.code });
    for (const [reason, n] of page.unenriched) metrics.recordsUnenriched.inc({ location, reason }, n);
    // An idle page leaves the watermark as it was: parsed and observed again only when it moved.
    if (watermark !== null && watermark !== this.observedWatermark) {
      const instant = parseInstant(watermark);
      if (instant !== null) metrics.observeHighWater(this.locationUid, toEpochMillis(instant));
      this.observedWatermark = watermark;
    }
    traversal.published += page.published;
    traversal.deadLettered += page.deadLetters.length;
    traversal.deduplicated += page.deduplicated;
    this.totals.pages += 1;
    this.totals.published += page.published;
    this.totals.deadLettered += page.deadLetters.length;
    this.totals.deduplicated += page.deduplicated;
    this.totals.redacted += page.redacted;
    this.totals.belowWatermark += page.belowWatermark;
  }

  /**
   * A split location's history lane committed `records` calls (also counted as published by recordPage); 0 at
   * the split, so that the location's series exists from then on (a rate of 0 is an answer, no series is not).
   */
  historyPublished(records: number): void {
    this.metrics.backfillRecords.inc({ location: this.location }, records);
  }

  /**
   * A live traversal that started at `startedAt` completed at `now` (ms since epoch); `caughtUp`: no history lane
   * is left behind it (see LocationTotals.traversalsCompleted). The metrics count every one: a live lane's
   * completed poll is as fresh as any.
   */
  traversalCompleted(startedAt: number, now: number, caughtUp = true): void {
    this.metrics.traversalDuration.observe((now - startedAt) / 1000);
    this.metrics.observeTraversalSuccess(this.locationUid, now);
    // A live poll: whatever was made before it began is committed now (its history lane aside).
    this.metrics.observeCaughtUp(this.locationUid, startedAt);
    this.totals.caughtUpAt = startedAt;
    if (caughtUp) this.totals.traversalsCompleted += 1;
  }

  /** The listing rejected a cursor and the traversal restarted from the watermark. */
  cursorRestarted(recognised: boolean): void {
    this.metrics.cursorRestarts.inc({
      location: this.location,
      reason: recognised ? 'invalid_cursor' : 'rejected_4xx',
    });
  }
}

/** The updatedAt of each published call as ms since epoch (the unreadable ones left out: nothing to time). */
function committedAt(updatedAt: readonly string[]): number[] {
  const out: number[] = [];
  for (const text of updatedAt) {
    const instant = parseInstant(text);
    if (instant !== null) out.push(toEpochMillis(instant));
  }
  return out;
}
