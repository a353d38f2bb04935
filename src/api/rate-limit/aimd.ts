/**
 * The request rate of one limiter scope, learned from the API's answers: AIMD (additive increase,
 * multiplicative decrease), the rule TCP congestion control and Netflix's concurrency-limits use. Pure state
 * transitions; the caller passes the time (its injected clock) and what happened.
 *
 * - Start at api.requestsPerSecond in "slow start": while nothing was ever refused, each request sent at
 *   full pace adds `slowStartGrowth` of a request per second (the rate grows by that fraction each second),
 *   so a limit far above the configured rate is found in seconds, not minutes.
 * - A refusal (429, or 503 with Retry-After; not one asking for longer than any hold: scope-limiter.ts) multiplies
 *   the rate by `decrease` (below 1), or by `deepDecrease` when it came within a second of the end of the
 *   last hold (still far above the limit), once per round: refusals of requests sent before the last
 *   decrease were caused by the old rate and are not counted again.
 *   Slow start ends; the rate where it was refused is remembered as the peak.
 * - After that, each request sent at full pace adds `increasePerSecond × peak / rate`, i.e. the rate grows by
 *   `increasePerSecond × peak` per second: gently, so the probing above a limit costs a few refusals per
 *   cycle (about 1 % of requests), and alike at 5 and 200 requests/s.
 * - After `slowStartAfterMs` (20 s) at full pace without a refusal, slow start again (recovery after a storm).
 * - Requests sent below the pace (the scope was not the bottleneck) change nothing: a rate never used is not
 *   trusted (as TCP's congestion-window validation), so an idle scope does not come back with a burst.
 * - An announced policy (RateLimit-Policy q/w) replaces probing: the rate is set just under what it allows
 *   (`announcedShare`) and never probes above it; refusals still decrease it (several instances sharing one
 *   grant each see the whole quota announced).
 * Every rate stays within [floor, ceiling].
 */

export interface AimdSettings {
  initialRate: number;
  floor: number;
  ceiling: number;
  /** Multiplier on a refusal, in (0, 1). */
  decrease: number;
  /**
   * Multiplier on a refusal that came right after a hold ended (the rate is still far above the limit: the
   * bucket the hold refilled is already spent), in (0, decrease].
   */
  deepDecrease: number;
  /** Additive increase per second, as a fraction of the rate last refused. */
  increasePerSecond: number;
  /** Growth per second before the first refusal, as a fraction of the rate. */
  slowStartGrowth: number;
  /** Share of an announced rate to use, in (0, 1]: a margin for clocks and latency jitter. */
  announcedShare: number;
  /**
   * Slow start again after this long at full pace without a refusal: after a storm of refusals that had
   * nothing to do with our rate (an API answering 429 to everyone for a while) the rate sits near the floor,
   * where additive steps (a share of a tiny last peak) would take minutes to climb back. 20 s (with
   * 60 s, a scope left at a third of its demand by a hidden limit took over a minute to come back after the
   * limit was lifted): back to the demand about 20 s + ln(demand / rate) / 0.15 s after the last refusal.
   * Shorter than an AIMD cycle at a steady limit (about 25 s at 1 % a second from 0.75 of the peak), so each
   * cycle's climb ends in slow start: a few more refusals (measured 0.3–1.2 % of requests after warm-up, not
   * 0.2–0.7 %), for a bounded recovery.
   */
  slowStartAfterMs: number;
}

export const DEFAULT_AIMD: Omit<AimdSettings, 'initialRate' | 'floor' | 'ceiling'> = Object.freeze({
  decrease: 0.75,
  deepDecrease: 0.5,
  increasePerSecond: 0.01,
  slowStartGrowth: 0.15,
  announcedShare: 0.95,
  slowStartAfterMs: 20_000,
});

export interface AimdState {
  /** Requests per second allowed now. */
  rate: number;
  slowStart: boolean;
  /** The rate at the last refusal (0 before any). */
  peak: number;
  /** When the rate was last decreased: refusals of requests sent before this are not counted again. */
  decreasedAtMs: number;
  /** The rate an API's policy announced; null when none was. */
  announced: number | null;
}

function clamp(rate: number, settings: AimdSettings, announced: number | null): number {
  const ceiling = announced === null ? settings.ceiling : Math.min(settings.ceiling, announced);
  return Math.min(Math.max(rate, settings.floor), Math.max(ceiling, settings.floor));
}

export function checkAimdSettings(settings: AimdSettings): void {
  const { initialRate, floor, ceiling, decrease, increasePerSecond, slowStartGrowth, announcedShare } =
    settings;
  if (!(floor > 0 && floor <= ceiling)) throw new RangeError('the rate floor must be > 0 and <= the ceiling');
  if (!(initialRate > 0)) throw new RangeError('the initial rate must be > 0');
  if (!(decrease > 0 && decrease < 1)) throw new RangeError('decrease must be in (0, 1)');
  if (!(settings.deepDecrease > 0 && settings.deepDecrease <= decrease))
    throw new RangeError('deepDecrease must be in (0, decrease]');
  if (!(increasePerSecond >= 0 && slowStartGrowth >= 0)) throw new RangeError('increases must be >= 0');
  if (!(announcedShare > 0 && announcedShare <= 1)) throw new RangeError('announcedShare must be in (0, 1]');
}

export function initialAimd(settings: AimdSettings): AimdState {
  return {
    rate: clamp(settings.initialRate, settings, null),
    slowStart: true,
    peak: 0,
    decreasedAtMs: Number.NEGATIVE_INFINITY,
    announced: null,
  };
}

/**
 * A request was answered (not refused). `paced`: it had waited for the pace, so the rate was the
 * bottleneck; only then does the rate grow.
 */
export function onAnswered(
  state: AimdState,
  settings: AimdSettings,
  paced: boolean,
  nowMs: number,
): AimdState {
  if (!paced) return state;
  if (
    !state.slowStart &&
    state.announced === null &&
    nowMs - state.decreasedAtMs >= settings.slowStartAfterMs
  )
    state = { ...state, slowStart: true };
  if (state.announced !== null && state.rate >= state.announced * settings.announcedShare) return state;
  const step = state.slowStart
    ? settings.slowStartGrowth
    : (settings.increasePerSecond * state.peak) / state.rate;
  const rate = clamp(state.rate + step, settings, announcedLimit(state, settings));
  return rate === state.rate ? state : { ...state, rate };
}

/** A request sent at `sentAtMs` was refused (429, or 503 with Retry-After) at `nowMs`. */
export function onRefused(
  state: AimdState,
  settings: AimdSettings,
  sentAtMs: number,
  nowMs: number,
  deep = false,
): AimdState {
  if (sentAtMs < state.decreasedAtMs) return state;
  const factor = deep ? settings.deepDecrease : settings.decrease;
  return {
    ...state,
    rate: clamp(state.rate * factor, settings, announcedLimit(state, settings)),
    slowStart: false,
    peak: state.rate,
    decreasedAtMs: nowMs,
  };
}

/**
 * The API announced a policy of `ratePerSecond`. The first announcement (or a change) sets the rate just
 * under it, unless refusals brought it lower since; probing never goes above it.
 */
export function onAnnounced(state: AimdState, settings: AimdSettings, ratePerSecond: number): AimdState {
  if (!(ratePerSecond > 0) || state.announced === ratePerSecond) return state;
  const limit = ratePerSecond * settings.announcedShare;
  // After refusals the learned rate stands when it is lower (other instances may share the quota).
  const refused = state.decreasedAtMs !== Number.NEGATIVE_INFINITY;
  return {
    ...state,
    announced: ratePerSecond,
    slowStart: false,
    peak: ratePerSecond,
    rate: clamp(refused ? Math.min(state.rate, limit) : limit, settings, limit),
  };
}

function announcedLimit(state: AimdState, settings: AimdSettings): number | null {
  return state.announced === null ? null : state.announced * settings.announcedShare;
}
