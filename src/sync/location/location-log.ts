/**
 * Every log line of one location (its split, its traversals, its pages), worded in one place. Reporting
 * only: each function logs what it is given and decides nothing. Lines of a traversal go to its logger
 * (TraversalRun.log: location and traversal bound); debug lines are built only when debug is on, since an
 * idle poll at 10,000 locations would otherwise cost hundreds of lines a second.
 */
import type { ConnectorError } from '../../errors/index.js';
import type { Logger } from '../../logging/logger.js';
import type { LaneOffset, LocationOffset } from '../model.js';
import type { AssembledPage, PreparedPage } from './page-pipeline.js';
import type { CommittedPage } from '../lanes/lane-role.js';
import type { CursorRejection, LocationSignal } from '../ports.js';
import type { TraversalRun } from './traversal-run.js';

/** The split check was refused (a 4xx to order=desc): the location reads its history first, unsplit. */
export function logSplitRefused(logger: Logger, locationUid: string, error: ConnectorError): void {
  logger.warn(
    { location: locationUid, code: error.code, err: error },
    'the split check (one order=desc listing request) was refused: this location is not split, its history is read before the present',
  );
}

/** The split check found no reason to split. */
export function logNotSplit(logger: Logger, locationUid: string, newest: string | null): void {
  logger.debug(
    { location: locationUid, newest },
    'location not split: no call listed, a backlog under lanes.splitBacklogMs, or nothing before T0',
  );
}

/** The location was split at T0 (`split.history.until`), its history lane starting from where it stood. */
export function logSplit(
  logger: Logger,
  locationUid: string,
  split: LocationOffset,
  newest: string | null,
  startSince: string | null,
): void {
  logger.info(
    {
      location: locationUid,
      until: split.history?.until,
      newest,
      historyFrom: split.history?.watermark ?? split.history?.since ?? startSince,
    },
    'location split: the live lane polls from T0 (until), the history lane reads up to it behind',
  );
}

/** A traversal started from `from` (debug only). */
export function logTraversalStarted(logger: Logger, traversal: TraversalRun, from: LaneOffset): void {
  if (logger.isLevelEnabled('debug'))
    traversal.log.debug({ since: from.since, resumingCursor: from.cursor !== null }, 'traversal started');
}

/**
 * The page's lines: records listed below the watermark, tombstones, and (one line per page) the calls
 * published unenriched although enrichment is on, whose customer number the privacy policy redacted.
 */
export function logPage(
  traversal: TraversalRun,
  prepared: PreparedPage,
  page: AssembledPage,
  watermark: string | null,
): void {
  const { belowWatermark } = prepared.outcome;
  if (belowWatermark.length > 0)
    traversal.log.warn(
      { count: belowWatermark.length, watermark, uids: belowWatermark.slice(0, 10).map((e) => e.uid) },
      'records older than the watermark were listed (the API broke its sort order); published them again rather than risk losing them',
    );
  for (const uid of page.tombstones)
    traversal.log.info({ uid }, 'call gone (GET answered not found): tombstone');
  if (page.unenrichedExamples.length > 0) {
    const onlyGone = page.unenriched.size === 1 && page.unenriched.has('gone');
    traversal.log[onlyGone ? 'info' : 'warn'](
      { counts: Object.fromEntries(page.unenriched), examples: page.unenrichedExamples },
      'calls published unenriched, customer number redacted (see examples for what the single-call API said)',
    );
  }
}

/** A history page committed (debug only). */
export function logHistoryPage(logger: Logger, traversal: TraversalRun, committed: CommittedPage): void {
  if (!logger.isLevelEnabled('debug')) return;
  const { from, request, listed, prepared, page, superseded } = committed;
  const { outcome } = prepared;
  traversal.log.debug(
    {
      since: from.since,
      resumedCursor: request.kind === 'next',
      listed: listed.items.length,
      published: page.calls.length,
      duplicates: outcome.duplicates.length,
      supersededByLive: superseded,
      leftToLive: prepared.leftToLive,
      watermark: outcome.offset.watermark,
      boundary: outcome.offset.boundary.length,
      complete: outcome.complete,
    },
    'history page committed',
  );
}

/** The page's commit found `stored`, another writer's offset, which the location continues from. */
export function logSuperseded(traversal: TraversalRun, stored: LocationOffset): void {
  traversal.log.warn(
    {
      lane: traversal.lane,
      watermark: stored.watermark,
      historyWatermark: stored.history?.watermark ?? null,
      split: stored.history !== undefined,
    },
    "the page's commit found another writer's offset stored: continuing from it",
  );
}

/** The history lane's traversal reached T0: the lanes merged. */
export function logLanesMerged(traversal: TraversalRun, nowMs: number): void {
  traversal.log.info(
    {
      pages: traversal.pages,
      published: traversal.published,
      deduplicated: traversal.deduplicated,
      durationMs: nowMs - traversal.startedAt,
    },
    'history lane reached T0: the lanes merged',
  );
}

/**
 * A live traversal completed, at debug when it was an idle poll (most traversals of a running connector:
 * two info lines each would be hundreds of lines a second at 10,000 locations), else at info.
 */
export function logTraversalComplete(
  logger: Logger,
  traversal: TraversalRun,
  since: string | null,
  nowMs: number,
): void {
  const level = traversal.idle ? 'debug' : 'info';
  if (logger.isLevelEnabled(level))
    traversal.log[level](
      {
        pages: traversal.pages,
        published: traversal.published,
        deadLettered: traversal.deadLettered,
        deduplicated: traversal.deduplicated,
        since,
        durationMs: nowMs - traversal.startedAt,
      },
      'traversal complete',
    );
}

/** The listing rejected the traversal's cursor: it restarts from `from`, the lane's watermark. */
export function logCursorRestart(
  traversal: TraversalRun,
  rejection: CursorRejection,
  from: LaneOffset,
): void {
  const { apiCode, status, recognised, detail } = rejection;
  traversal.log.warn(
    { apiCode, status, recognised, api: detail, since: from.since, boundary: from.boundary.length },
    `cursor rejected (${detail}): restarting from the watermark`,
  );
}

/** A signal's offset was stored (signal-steps-rule.ts): a reset done, a backfill started (or done: nothing to read). */
export function logSignalCarriedOut(
  logger: Logger,
  signal: LocationSignal,
  offset: LocationOffset,
  done: boolean,
): void {
  if (signal.reset !== undefined) {
    logger.info({ since: offset.since }, 'reset signal carried out: the location reads from its new offset');
    return;
  }
  if (done) {
    logger.info('backfill signal done at once: nothing published in its range to read again');
    return;
  }
  logger.info(
    { since: offset.history?.since ?? null, until: offset.history?.until },
    'backfill signal started: the range is read again as a history lane beside the live one',
  );
}
