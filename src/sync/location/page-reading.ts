/**
 * How a lane's page is read, in its turn or ahead (read-ahead.ts PageReader): listed as the lane lists
 * (LaneRole.list: both lanes through the same-instant group, group-read.ts), then prepared
 * (page-pipeline.ts), both at the lane's priority; and its single-call answers asked again before they pass
 * privacy.maxEnrichmentAgeMs (Enricher.refresh), in the background while a page waits for its turn, so
 * privacy is never decided by an old answer and the turn holds the location only for its commit.
 */
import type { Clock } from '../../time/clock.js';
import { answerOlderThan, type Enricher } from './enricher.js';
import type { LaneRole } from '../lanes/lane-role.js';
import type { LaneOffset, RequestHint } from '../model.js';
import { preparePage, type PipelineSettings, type PreparedPage } from './page-pipeline.js';
import type { CallsApi, PageRequest } from '../ports.js';
import type { KeepFresh, PageReader } from './read-ahead.js';

/** Where a page's listing and single calls come from. */
export interface PageSources {
  api: Pick<CallsApi, 'listPage'>;
  enricher: Enricher;
}

/**
 * How `role`'s page of `request` from `from` is read: listed as the lane lists (LaneRole.list), then prepared
 * (page-pipeline.ts) with `pipeline`, both at priority `hint`.
 */
export function pageReader(
  { api, enricher }: PageSources,
  role: Pick<LaneRole, 'list'>,
  from: LaneOffset,
  request: PageRequest,
  pipeline: PipelineSettings,
  hint: RequestHint,
): PageReader {
  return {
    list: (signal) => role.list((r, s) => api.listPage(r, s, hint), request, from, pipeline, signal),
    prepare: (listed, signal) => preparePage(from, listed, pipeline, enricher, signal, hint),
  };
}

export interface RecentAnswers {
  enricher: Enricher;
  clock: Clock;
  /** privacy.maxEnrichmentAgeMs; unset: no bound. */
  maxEnrichmentAgeMs: number | undefined;
}

/** Refresh passes over one page before it is handed on as it stands (each pass asks only old answers). */
const MAX_REFRESH_PASSES = 4;

/**
 * When `prepared` stops being committable: its oldest enrichment's answer time plus `maxEnrichmentAgeMs`
 * (privacy.ts publishes a number only on an enrichment). null: never (no bound, or no timed enrichment).
 */
export function expiresAt(prepared: PreparedPage, maxEnrichmentAgeMs: number | undefined): number | null {
  if (maxEnrichmentAgeMs === undefined) return null;
  let oldest = Number.POSITIVE_INFINITY;
  for (const item of prepared.enriched)
    if (item.enrichment !== null && item.answeredAtMs !== undefined)
      oldest = Math.min(oldest, item.answeredAtMs);
  return oldest === Number.POSITIVE_INFINITY ? null : oldest + maxEnrichmentAgeMs;
}

/** Whether `prepared` may be committed at `nowMs`: every enrichment answered at or after nowMs − the bound. */
export function committable(
  prepared: PreparedPage,
  nowMs: number,
  maxEnrichmentAgeMs: number | undefined,
): boolean {
  const expires = expiresAt(prepared, maxEnrichmentAgeMs);
  return expires === null || nowMs <= expires;
}

/**
 * The time a page read ahead is kept ready for its turn: a quarter of the bound. A page whose answers expire
 * sooner is refreshed first (read-ahead.ts), so the turn that takes it finds it committable.
 */
export function freshMarginMs(maxEnrichmentAgeMs: number): number {
  return maxEnrichmentAgeMs / 4;
}

/**
 * `prepared` with its single-call answers asked again until every enrichment stays committable for at least
 * freshMarginMs: a page read ahead may wait long (a history page, for hours) while a call turns private, and
 * the privacy rule must judge the number it publishes by a recent answer. Each pass asks, oldest first, the
 * answers older than half the bound (Enricher.refresh), so a pass that takes longer than the margin is
 * followed by another over what aged meanwhile; after MAX_REFRESH_PASSES the page is handed on as it stands
 * (its commit still checks `committable`). Runs in the background for a history page (read-ahead.ts), never
 * in its turn; a live page whose turn finds it old refreshes it in that turn (the live poll's own work).
 */
export async function withRecentAnswers(
  { enricher, clock, maxEnrichmentAgeMs }: RecentAnswers,
  prepared: PreparedPage,
  hint: () => RequestHint,
  signal?: AbortSignal,
): Promise<PreparedPage> {
  if (maxEnrichmentAgeMs === undefined) return prepared;
  const margin = freshMarginMs(maxEnrichmentAgeMs);
  let page = prepared;
  for (let pass = 0; pass < MAX_REFRESH_PASSES; pass++) {
    const expires = expiresAt(page, maxEnrichmentAgeMs);
    if (expires === null || clock.now() + margin <= expires) return page;
    const notBeforeMs = clock.now() - maxEnrichmentAgeMs / 2;
    const enriched = await enricher.refresh(page.enriched, notBeforeMs, signal, hint());
    page = enriched === page.enriched ? page : { ...page, enriched: [...enriched] };
  }
  return page;
}

/**
 * `prepared` with every enrichment answered before `nowMs` − the bound dropped (the call published
 * unenriched, hence redacted, reason `unavailable`): the last guard of the bound at commit, for a page whose
 * refreshes could not keep up (its single calls slower than the bound allows). Usually `prepared` itself.
 */
export function withoutExpiredAnswers(
  prepared: PreparedPage,
  nowMs: number,
  maxEnrichmentAgeMs: number | undefined,
): PreparedPage {
  if (committable(prepared, nowMs, maxEnrichmentAgeMs) || maxEnrichmentAgeMs === undefined) return prepared;
  const notBeforeMs = nowMs - maxEnrichmentAgeMs;
  const detail = `its single-call answer was older than privacy.maxEnrichmentAgeMs (${maxEnrichmentAgeMs} ms) at commit`;
  return {
    ...prepared,
    enriched: prepared.enriched.map((item) =>
      answerOlderThan(item, notBeforeMs)
        ? { listed: item.listed, enrichment: null, unenriched: { reason: 'unavailable', detail } }
        : item,
    ),
  };
}

/** How a lane's read-ahead keeps its page committable while it waits (read-ahead.ts KeepFresh). */
export function keepingFresh(answers: RecentAnswers, hint: () => RequestHint): KeepFresh | undefined {
  const { maxEnrichmentAgeMs, clock } = answers;
  if (maxEnrichmentAgeMs === undefined) return undefined;
  return {
    now: () => clock.now(),
    staleAt: (prepared) => {
      const expires = expiresAt(prepared, maxEnrichmentAgeMs);
      return expires === null ? null : expires - freshMarginMs(maxEnrichmentAgeMs);
    },
    refresh: (prepared, signal) => withRecentAnswers(answers, prepared, hint, signal),
  };
}
