/**
 * The interval the scheduler polls at now: poll.intervalMs, stretched evenly when the live polls alone would
 * take more than their share of a budget. Pure rules over plain data; stretch.ts applies them on the
 * injected clock. docs/sync.md ("Stretching") gives the rule and why.
 *
 * Two budgets bound how often every location can be polled:
 * - requests, per rate-limit scope (a grant): a live poll of a quiet location is one listing request, and the
 *   scope allows `ratePerSecond` now (the limiter's learned or announced rate). Live requests that do not come
 *   with a poll (the single calls of changes, as the limiter counted them over its window) are taken off that
 *   rate first, up to half of live's part of it (what stretching cannot shrink it does not chase). The scope's
 *   locations can be polled at best every `locations / (rate × liveShare − other)` seconds;
 * - workers: measured, not modelled. The share of wall time the workers were busy with live pages over a
 *   window on the clock (`busyShare`), where a page's time waiting for the rate limiter and a page that made no
 *   progress (a restarted cursor and its re-reading: Karn's rule, an ambiguous sample is not taken) do not
 *   count. A location runs one page at a time, so one slow location is at most one worker's worth of it:
 *   alone it cannot stretch the others unless it is more than live's share of the workers. The stretch factor
 *   moves like a gradient limiter's: multiplied by busyShare / liveShare, by at most 2 (up, once per window, so
 *   that the share measured reflects the last factor) or 1/2 (down, once per half window), never below 1 and
 *   never above what every location holding a worker for a whole interval would need
 *   (`locations / (workers × liveShare)`).
 * `liveShare` is what live may take while history waits (1 when no history waits). The effective interval is
 * the largest of the configured one, the worker-stretched one and the request bounds, so every location's polls
 * stay evenly spaced (poll-phase.ts) at a longer interval.
 *
 * Measurements decay on the clock (`DecayingSum`, an exponentially weighted sum with time constant the window),
 * not per turn, so when the cause goes away the stretch recovers within a few windows even if no live turn ends.
 */

/** How much longer than the configured interval the effective one must be before it is reported as stretched. */
export const STRETCH_MARGIN = 0.1;

/** The largest step of the worker stretch factor per update, up (×) or down (÷). */
export const MAX_STRETCH_STEP = 2;

/** At most this share of live's request budget is set aside for live requests that come without a poll. */
export const MAX_OTHER_LIVE_SHARE = 0.5;

/** The measuring window (ms) for a configured interval: twice it, within 2 s .. 60 s. */
export function stretchWindowMs(configuredMs: number): number {
  return Math.min(60_000, Math.max(2_000, 2 * configuredMs));
}

/** An exponentially weighted sum on the clock: `value` as of `atMs`. */
export interface DecayingSum {
  value: number;
  atMs: number;
}

export const EMPTY_SUM: DecayingSum = { value: 0, atMs: 0 };

/** The sum's value at `nowMs`, decayed with time constant `windowMs`. */
export function decayedValue(sum: DecayingSum, nowMs: number, windowMs: number): number {
  const elapsed = Math.max(0, nowMs - sum.atMs);
  return sum.value * Math.exp(-elapsed / windowMs);
}

/** The sum after `amount` is added at `nowMs`. */
export function addToSum(sum: DecayingSum, nowMs: number, amount: number, windowMs: number): DecayingSum {
  return { value: decayedValue(sum, nowMs, windowMs) + amount, atMs: Math.max(nowMs, sum.atMs) };
}

/** What the workers did over the window. */
export interface WorkerLoad {
  /** Busy ms of the live pages ended, as a DecayingSum's value now. */
  endedBusyMs: number;
  /** Busy ms so far of each live page running now. */
  runningBusyMs: readonly number[];
  windowMs: number;
  /** poll.maxLocationsInFlight. */
  workers: number;
}

/**
 * The share (0..1) of wall time the workers were busy with live pages over the window: the decayed sum of the
 * pages ended (a steady rate r of busy ms per ms sums to r × window) and the pages running now, each of those
 * counting at most one window (one worker's worth).
 */
export function busyShare(load: WorkerLoad): number {
  if (!(load.workers > 0) || !(load.windowMs > 0)) return 0;
  let busy = load.endedBusyMs;
  for (const ms of load.runningBusyMs) busy += Math.min(Math.max(0, ms), load.windowMs);
  return Math.min(1, busy / (load.windowMs * load.workers));
}

/** A live page as it ended, for the busy time it counts. */
export interface LivePage {
  startedAtMs: number;
  endedAtMs: number;
  /** Time its requests waited for the rate limiter (not worker demand). */
  limiterWaitMs: number;
  /** It completed the traversal or published something; a page that did neither counts nothing. */
  progressed: boolean;
}

/** The busy ms a live page counts (see the module comment). */
export function pageBusyMs(page: LivePage): number {
  if (!page.progressed) return 0;
  return Math.max(0, page.endedAtMs - page.startedAtMs - page.limiterWaitMs);
}

/** The worker stretch factor's state. */
export interface WorkerStretch {
  /** ≥ 1: the configured interval is multiplied by it. */
  factor: number;
  /** When it last went up / down (ms; -infinity: never). */
  raisedAtMs: number;
  loweredAtMs: number;
}

export const NO_STRETCH: WorkerStretch = {
  factor: 1,
  raisedAtMs: Number.NEGATIVE_INFINITY,
  loweredAtMs: Number.NEGATIVE_INFINITY,
};

export interface WorkerDemand {
  nowMs: number;
  /** busyShare() now. */
  busyShare: number;
  /** Share of the workers live may take (0..1]. */
  liveShare: number;
  /** Locations scheduled. */
  locations: number;
  workers: number;
  windowMs: number;
}

/** The largest worker stretch factor: every location holding a worker for a whole interval. */
export function maxWorkerStretch(locations: number, workers: number, liveShare: number): number {
  if (!(workers > 0)) return 1;
  return Math.max(1, locations / (workers * Math.max(liveShare, Number.EPSILON)));
}

/** The worker stretch after a measurement (see the module comment). */
export function nextWorkerStretch(stretch: WorkerStretch, demand: WorkerDemand): WorkerStretch {
  const target = Math.max(demand.liveShare, Number.EPSILON);
  const ceiling = maxWorkerStretch(demand.locations, demand.workers, demand.liveShare);
  const ratio = demand.busyShare / target;
  if (stretch.factor > ceiling) return { ...stretch, factor: ceiling, loweredAtMs: demand.nowMs };
  if (ratio > 1 + STRETCH_MARGIN && demand.nowMs - stretch.raisedAtMs >= demand.windowMs) {
    const factor = Math.min(ceiling, stretch.factor * Math.min(MAX_STRETCH_STEP, ratio));
    return factor > stretch.factor ? { ...stretch, factor, raisedAtMs: demand.nowMs } : stretch;
  }
  if (ratio < 1 / (1 + STRETCH_MARGIN) && stretch.factor > 1) {
    if (demand.nowMs - stretch.loweredAtMs < demand.windowMs / 2) return stretch;
    const factor = Math.max(1, stretch.factor * Math.max(1 / MAX_STRETCH_STEP, ratio));
    return { ...stretch, factor, loweredAtMs: demand.nowMs };
  }
  return stretch;
}

/** What the limiter of one rate-limit scope says, and the locations the scheduler polls on it. */
export interface ScopeBudget {
  locations: number;
  /** Requests per second the scope allows now (learned or announced); null: unknown. */
  ratePerSecond: number | null;
  /** Live requests the scope granted per second over its window; null: not measured. */
  liveGrantedPerSecond: number | null;
}

/**
 * The shortest interval (ms) at which a scope's locations' live polls fit live's share of its rate, when polled
 * at `currentMs` now (see the module comment); 0 when the rate is unknown.
 */
export function requestBoundMs(scope: ScopeBudget, liveShare: number, currentMs: number): number {
  const { locations, ratePerSecond } = scope;
  if (ratePerSecond === null || !(ratePerSecond > 0) || locations === 0) return 0;
  const liveRate = ratePerSecond * Math.max(liveShare, Number.EPSILON);
  const pollsPerSecond = currentMs > 0 ? (locations * 1000) / currentMs : 0;
  const other = Math.min(
    MAX_OTHER_LIVE_SHARE * liveRate,
    Math.max(0, (scope.liveGrantedPerSecond ?? 0) - pollsPerSecond),
  );
  return (locations * 1000) / (liveRate - other);
}

export interface LiveDemand {
  /** poll.intervalMs. */
  configuredMs: number;
  /** The worker stretch factor (≥ 1). */
  workerFactor: number;
  /** Per rate-limit scope: its budget. */
  scopes: readonly ScopeBudget[];
  /** Share of requests live may take (0..1]. */
  liveShare: number;
  /** The effective interval in force now (for the polls the limiter's figures were measured at). */
  currentMs: number;
}

/** The interval (ms) each location is polled at now (see the module comment). */
export function effectiveIntervalMs(demand: LiveDemand): number {
  let ms = demand.configuredMs * Math.max(1, demand.workerFactor);
  for (const scope of demand.scopes)
    ms = Math.max(ms, requestBoundMs(scope, demand.liveShare, demand.currentMs));
  return ms;
}

/** Whether the effective interval is reported as stretched now, given whether it was (see the module comment). */
export function isStretched(effectiveMs: number, configuredMs: number, wasStretched: boolean): boolean {
  if (wasStretched) return effectiveMs > configuredMs;
  return effectiveMs > configuredMs * (1 + STRETCH_MARGIN);
}
