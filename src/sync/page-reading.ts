/**
 * How a lane's page is read, in its turn or ahead (read-ahead.ts PageReader): listed as the lane lists
 * (LaneRole.list, e.g. the history lane through the same-instant group, group-read.ts), then prepared
 * (page-pipeline.ts), both at the lane's priority; and, when its turn comes, its single-call answers asked
 * again if older than privacy.maxEnrichmentAgeMs (Enricher.refresh), so privacy is never decided by an old
 * answer.
 */
import type { Clock } from '../time/clock.js';
import type { Enricher } from './enricher.js';
import type { LaneRole } from './lane-role.js';
import type { LaneOffset, RequestHint } from './model.js';
import { preparePage, type PipelineSettings, type PreparedPage } from './page-pipeline.js';
import type { CallsApi, PageRequest } from './ports.js';
import type { PageReader } from './read-ahead.js';

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

/**
 * `prepared` with its single-call answers no older than maxEnrichmentAgeMs: a page read ahead may wait long
 * for its turn (a history page, for hours) while a call turns private; those answers are asked again, by
 * the same enricher (at priority `hint()`), so the privacy rule judges the number it publishes by a recent
 * answer.
 */
export async function withRecentAnswers(
  { enricher, clock, maxEnrichmentAgeMs }: RecentAnswers,
  prepared: PreparedPage,
  hint: () => RequestHint,
  signal?: AbortSignal,
): Promise<PreparedPage> {
  if (maxEnrichmentAgeMs === undefined) return prepared;
  const notBeforeMs = clock.now() - maxEnrichmentAgeMs;
  const enriched = await enricher.refresh(prepared.enriched, notBeforeMs, signal, hint());
  return enriched === prepared.enriched ? prepared : { ...prepared, enriched: [...enriched] };
}
