/**
 * Which kind of turn a worker takes next: the one rule sharing the workers between the kinds of work. Pure;
 * the scheduler asks it when a worker looks for work and, during a history turn, after each page (whether the
 * turn goes on: each page is a turn of the rule).
 *
 * Kinds: `nudge` (a live poll a webhook delivery asked for, nudges.ts), `live` (a location due for its
 * scheduled live poll), `check` (a scheduled live poll of a location whose live lane has not completed a
 * traversal since this scheduler got it: after a start or a takeover, a first traversal that only checks for
 * changes nobody announced) and `history` (a split location's backfill, lanes.ts).
 *
 * The rule is deficit round robin over the kinds, so that no kind of work starves another whatever the others'
 * demand: each kind has a guaranteed share of the turns (history: api.rateLimit.backfillShare, the share the rate
 * limiter owes history's requests; nudge: api.rateLimit.nudgeShare; the rest to scheduled polls, CHECK_SHARE of
 * it to checks and the others to live).
 * When several kinds wait for a worker, each is credited its share (scaled so that one turn's credits sum to
 * one) and the kind owed most takes the turn and pays one (ties: nudge, then live, then check, then history: a
 * change known to have happened first, then the present). Checks and live polls are both scheduled polls: they
 * split the scheduled share when both wait, and either alone has all of it, except that checks waiting beside
 * nudges keep only their own share (checksGiven). So after a start or a takeover, while a thousand
 * first traversals wait, a nudged location (a change known to exist) is polled before them, and they keep a
 * bounded share (with the default shares, 2 turns in 7 while nudges wait). A kind with
 * nothing waiting is credited nothing and its credit is cleared (no banking while idle), and its share is
 * borrowed by the kinds waiting, in proportion to theirs (a kind alone waiting takes the turn without paying).
 * So live polls alone filling the workers do not starve history nor nudges, and a flood of
 * deliveries does not starve the scheduled polls nor history. History also runs in at most half the slots (at
 * least one), so a location falling due finds a free worker while history pages commit.
 */

export type TurnKind = 'nudge' | 'live' | 'check' | 'history';

/** The kinds in the order ties go. */
export const TURN_KINDS: readonly TurnKind[] = ['nudge', 'live', 'check', 'history'];

/** The part of the scheduled polls' share that first traversals (checks) are guaranteed. */
export const CHECK_SHARE = 0.2;

/** Each kind's guaranteed share of the turns (0..1, summing to 1). */
export type TurnShares = Readonly<Record<TurnKind, number>>;

/** Each kind's credit in turns: grows by its share while it waits beside another kind, pays 1 per turn. */
export type TurnDeficits = Readonly<Record<TurnKind, number>>;

export const NO_DEFICITS: TurnDeficits = { nudge: 0, live: 0, check: 0, history: 0 };

/** The guaranteed shares of history and nudges (api.rateLimit.backfillShare, api.rateLimit.nudgeShare). */
export interface GivenShares {
  history: number;
  nudge: number;
}

/**
 * The shares from history's and nudges' guaranteed shares; scheduled polls have the rest, CHECK_SHARE of it for
 * checks. A RangeError if they do not fit.
 */
export function turnShares(given: GivenShares): TurnShares {
  const { history, nudge } = given;
  if (!(history >= 0 && history <= 1)) throw new RangeError('the history share must be in 0..1');
  if (!(nudge >= 0 && nudge <= 1)) throw new RangeError('the nudge share must be in 0..1');
  if (history + nudge > 1) throw new RangeError('the history and nudge shares must sum to at most 1');
  const scheduled = Math.max(0, 1 - history - nudge);
  const check = scheduled * CHECK_SHARE;
  return { nudge, live: scheduled - check, check, history };
}

export interface WorkNow {
  /**
   * Work of each kind waits for a worker (nudge / live / check: a location due now as such; history: a page
   * ready); a kind left out does not.
   */
  waiting: Readonly<Partial<Record<TurnKind, boolean>>>;
  /** History turns running now, the asking one not included. */
  historyTurns: number;
  /** The scheduler's slots (poll.maxLocationsInFlight). */
  maxLocationsInFlight: number;
}

/** The kind given the turn (null: none, the worker parks) and the deficits after it. */
export interface TurnChoice {
  kind: TurnKind | null;
  deficits: TurnDeficits;
}

/**
 * How many history turns may run at once: half the slots (at least one). The others are kept for live work;
 * and fewer history pages at a time each finish sooner, which is what a split location's own live poll waits
 * for.
 */
export function historySlots(maxLocationsInFlight: number): number {
  return Math.max(1, Math.floor(maxLocationsInFlight / 2));
}

/** The kind of turn a worker takes now, and the deficits after it (see the module comment). */
export function nextTurn(deficits: TurnDeficits, shares: TurnShares, work: WorkNow): TurnChoice {
  const eligible = TURN_KINDS.filter(
    (kind) =>
      work.waiting[kind] === true &&
      (kind !== 'history' || work.historyTurns < historySlots(work.maxLocationsInFlight)),
  );
  // Idle kinds bank nothing.
  const kept: Record<TurnKind, number> = { ...NO_DEFICITS };
  for (const kind of eligible) kept[kind] = deficits[kind];
  if (eligible.length === 0) return { kind: null, deficits: kept };
  if (eligible.length === 1) return { kind: eligible[0] as TurnKind, deficits: kept };
  const given = checksGiven(shares, eligible);
  // The shares of the kinds waiting, scaled to sum to 1: an idle kind's share is borrowed by the others in
  // proportion to theirs.
  const waitingShares = eligible.reduce((sum, kind) => sum + given[kind], 0);
  let owed: TurnKind = eligible[0] as TurnKind;
  for (const kind of eligible) {
    kept[kind] += waitingShares > 0 ? given[kind] / waitingShares : 0;
    if (kept[kind] > kept[owed]) owed = kind;
  }
  kept[owed] -= 1;
  return { kind: owed, deficits: kept };
}

/**
 * The shares as given to the kinds waiting (`eligible`): checks and live polls are both scheduled polls, and
 * share the scheduled polls' share as live and check when both wait; a check alone waiting among the scheduled
 * polls has it all, unless a nudge waits: then checks keep only their own share, so known changes go first.
 */
function checksGiven(shares: TurnShares, eligible: readonly TurnKind[]): TurnShares {
  const scheduled = shares.live + shares.check;
  if (!eligible.includes('check')) return { ...shares, live: scheduled, check: 0 };
  if (!eligible.includes('live') && !eligible.includes('nudge'))
    return { ...shares, live: 0, check: scheduled };
  return shares;
}
