/**
 * The pure parts of the webhooks bench (bench/webhooks.ts): the polling arm's interval, the warm-up's bound, the
 * reconciliation polls a window holds, and one window's figures from what the sandbox answered and the consumer
 * received. No I/O, no clock: unit-tested in test/unit/bench/webhooks-figures.test.ts.
 */
import { percentile } from './stats.js';

/** The shortest polling interval (ms, whole seconds) at which idle listings and the changes' single calls fit the budget. */
export function pollingIntervalMs(locations: number, budgetPerS: number, changesPerS: number): number {
  const spare = budgetPerS - changesPerS;
  if (!(spare > 0)) throw new RangeError('the budget must exceed the changes per second');
  return Math.ceil(locations / spare) * 1000;
}

/**
 * How long the warm-up may take (ms): every location's first traversal is one listing at the budget, so a round
 * takes locations / budget; as much again for the polls that fell due meanwhile (see webhooks.ts, "Warm-up"), and
 * two minutes for the connector's start. Past it the arm measures anyway and says what was left (those polls then
 * count in the windows' requests: the figure can only get worse).
 */
export function warmUpBoundMs(locations: number, budgetPerS: number): number {
  return ((locations / budgetPerS) * 2 + 120) * 1000;
}

/** What the warm-up reads of a location (LocationStatus). */
export interface WarmUpLocation {
  state: string;
  nextRunAt: number | null;
  totals: { traversalsCompleted: number };
}

/** Locations not traversed yet, and those waiting past their due time (more than a second: a backlog). */
export function warmUpState(
  locations: readonly WarmUpLocation[],
  nowMs: number,
): { notTraversed: number; overdue: number } {
  let notTraversed = 0;
  let overdue = 0;
  for (const l of locations) {
    if (l.totals.traversalsCompleted < 1) notTraversed += 1;
    else if (l.state === 'waiting' && l.nextRunAt !== null && l.nextRunAt < nowMs - 1_000) overdue += 1;
  }
  return { notTraversed, overdue };
}

/**
 * Whether the arm may start measuring: every location traversed and, when `steady` (the webhook arms, whose polls
 * leave the budget room), a backlog under one second of the budget. A polling arm at the shortest interval uses
 * the whole budget by design, so its backlog never drains and is not waited for.
 */
export function warmedUp(
  state: { notTraversed: number; overdue: number },
  steady: boolean,
  budgetPerS: number,
): boolean {
  return state.notTraversed === 0 && (!steady || state.overdue <= budgetPerS);
}

/**
 * The reconciliation polls due in [fromMs, toMs): a location that completed a traversal is due again at the next
 * instant k × interval + phase × interval (src/sync/scheduler/poll-phase.ts), whether that traversal was its reconciliation
 * or a nudged poll, so its reconciliation polls fall on that grid whatever the nudges did. Counting them from the
 * phases is exact where an estimate (locations / interval × seconds) is off by the binomial spread: ±18 polls (one
 * standard deviation) in a 30 s window of 10,000 locations at 15 min, against the changes' own 60 requests.
 */
export function reconciliationPolls(
  phases: readonly number[],
  intervalMs: number,
  fromMs: number,
  toMs: number,
): number {
  let polls = 0;
  for (const phase of phases) {
    const offset = phase * intervalMs;
    polls += Math.ceil((toMs - offset) / intervalMs) - Math.ceil((fromMs - offset) / intervalMs);
  }
  return polls;
}

/** A change of a window: when it was made (its updatedAt) and when the consumer received it (undefined: never). */
export interface WindowChange {
  updatedAtMs: number;
  receivedAtMs: number | undefined;
}

/** Delays (s, ascending): a change never received counts with the delay it had at `endMs` (a lower bound). */
export function delaysWithMissing(changes: readonly WindowChange[], endMs: number): number[] {
  return changes.map((c) => ((c.receivedAtMs ?? endMs) - c.updatedAtMs) / 1000).sort((a, b) => a - b);
}

/** The requests the sandbox answered in a window (differences of its counters). */
export interface WindowRequests {
  listings: number;
  singleCalls: number;
  /** 429 answers of the hidden limit. */
  refused: number;
}

export interface WindowInput {
  /** The changes made in the window (updatedAt in it). */
  changes: readonly WindowChange[];
  /** When the arm stopped looking (a change not received by then counts with its delay then). */
  observedToMs: number;
  requests: WindowRequests;
  seconds: number;
  /** The reconciliation polls due in the window (reconciliationPolls); 0 for polling. */
  reconcilePolls: number;
}

export interface WindowFigures {
  p50S: number;
  p99S: number;
  received: number;
  missing: number;
  requestsPerS: number;
  /** The changes' own requests (reconciliation polls taken out) per change received. */
  perChange: number;
  /** Of those, the listings (a nudged poll's, shared by the changes it found). */
  listingsPerChange: number;
  singleCallsPerChange: number;
  /** Every request answered per change received, reconciliation included. */
  perChangeAll: number;
  reconcilePerS: number;
}

/** One window's figures (see WindowInput); per-change figures are NaN when no change of it was received. */
export function windowFigures(input: WindowInput): WindowFigures {
  const { changes, requests, seconds, reconcilePolls } = input;
  const delays = delaysWithMissing(changes, input.observedToMs);
  const received = changes.filter((c) => c.receivedAtMs !== undefined).length;
  const per = (n: number): number => (received === 0 ? Number.NaN : n / received);
  const changeListings = Math.max(0, requests.listings - reconcilePolls);
  return {
    p50S: percentile(delays, 0.5),
    p99S: percentile(delays, 0.99),
    received,
    missing: changes.length - received,
    requestsPerS: (requests.listings + requests.singleCalls) / seconds,
    perChange: per(changeListings + requests.singleCalls),
    listingsPerChange: per(changeListings),
    singleCallsPerChange: per(requests.singleCalls),
    perChangeAll: per(requests.listings + requests.singleCalls),
    reconcilePerS: reconcilePolls / seconds,
  };
}
