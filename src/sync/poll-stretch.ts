/**
 * The interval the scheduler polls at now: poll.intervalMs, stretched evenly when the live polls alone would
 * take more than their share of the budget (issue 32). Pure.
 *
 * Two budgets bound how often every location can be polled:
 * - requests: a live poll of a quiet location is one listing request, and each rate-limit scope (a grant)
 *   allows `ratePerSecond` now (learned from its refusals, or announced). Its locations can be polled at
 *   best every `locations / (rate × liveShare)` seconds;
 * - workers: a live turn holds a worker for `liveTurnMs` (a moving average), and there are
 *   `maxLocationsInFlight` workers: every location at best every `locations × liveTurnMs / (workers × liveShare)`.
 * `liveShare` is what live may take while history waits (1 − api.rateLimit.backfillShare; 1 when no history
 * waits): stretching to it leaves history its share of requests and turns, instead of the live polls taking the
 * whole budget and history none. The effective interval is the largest of the configured one and these, so
 * every location's polls stay evenly spaced (poll-phase.ts) at a longer interval, rather than some locations
 * waiting for a worker while others are polled on time.
 *
 * `stretched` says when to warn: on when the effective interval exceeds the configured one by more than
 * STRETCH_MARGIN (a learned rate wobbles around the limit), off once it is back to the configured one.
 */

/** How much longer than the configured interval the effective one must be before it is reported as stretched. */
export const STRETCH_MARGIN = 0.1;

/** Weight of the latest live turn in the moving average of live turn durations. */
export const TURN_AVERAGE_WEIGHT = 0.2;

export interface LiveDemand {
  /** poll.intervalMs. */
  configuredMs: number;
  /** Locations scheduled (not stopped for good). */
  locations: number;
  /** Per rate-limit scope: its locations and the rate it allows now (null: unknown). */
  scopes: ReadonlyArray<{ locations: number; ratePerSecond: number | null }>;
  /** Moving average of a live turn's duration (ms); null before the first one. */
  liveTurnMs: number | null;
  /** poll.maxLocationsInFlight. */
  workers: number;
  /** Share of requests and turns live may take (0..1]. */
  liveShare: number;
}

/** The interval (ms) each location is polled at now (see the module comment). */
export function effectiveIntervalMs(demand: LiveDemand): number {
  const share = Math.max(demand.liveShare, Number.EPSILON);
  let ms = demand.configuredMs;
  for (const scope of demand.scopes) {
    if (scope.ratePerSecond === null || !(scope.ratePerSecond > 0) || scope.locations === 0) continue;
    ms = Math.max(ms, (scope.locations * 1000) / (scope.ratePerSecond * share));
  }
  if (demand.liveTurnMs !== null && demand.workers > 0)
    ms = Math.max(ms, (demand.locations * demand.liveTurnMs) / (demand.workers * share));
  return ms;
}

/** Whether the effective interval is reported as stretched now, given whether it was (see the module comment). */
export function isStretched(effectiveMs: number, configuredMs: number, wasStretched: boolean): boolean {
  if (wasStretched) return effectiveMs > configuredMs;
  return effectiveMs > configuredMs * (1 + STRETCH_MARGIN);
}

/** The moving average of live turn durations after a turn of `turnMs` (null: none before). */
export function averageTurnMs(average: number | null, turnMs: number): number {
  return average === null ? turnMs : average + TURN_AVERAGE_WEIGHT * (turnMs - average);
}
