/**
 * A split location's backfill as this process sees it (lanes.ts, history-lane.ts): the figures kept while
 * its history lane reads, and the progress they give (API time left before T0, the rate it is read at, the
 * ETA). Pure. The metrics (metrics/metrics.ts) and the status view read them.
 */
import { parseInstant, toEpochMillis } from '../../time/instant.js';
import type { HistoryOffset, LaneOffset } from '../model.js';

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

/**
 * The figures once the history lane stands at `history` having published `records` more: none without a
 * history lane (the lanes merged, or never split); a new start for a new lane (another T0, or none known),
 * which starts its clock at `nowMs` from where the lane stands; else `known` moved on.
 */
export function backfillFiguresAfter(
  known: BackfillFigures | null,
  history: HistoryOffset | undefined,
  records: number,
  nowMs: number,
): BackfillFigures | null {
  if (history === undefined) return null;
  const positionMs = historyPositionMs(history);
  const untilMs = Date.parse(history.until);
  if (known === null || known.untilMs !== untilMs)
    return { untilMs, positionMs, startedAtMs: nowMs, startPositionMs: positionMs, records };
  return { ...known, positionMs, records: known.records + records };
}

/** Whether `figures` start a backfill rather than continue `known` (backfillFiguresAfter). */
export function startsBackfill(known: BackfillFigures | null, figures: BackfillFigures): boolean {
  return known === null || known.untilMs !== figures.untilMs;
}
