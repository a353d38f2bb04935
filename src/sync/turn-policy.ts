/**
 * Which kind of turn a worker takes next: the one rule sharing the workers between live work (a location due
 * for its live lane) and history (a split location's backfill, lanes.ts). Pure; the scheduler asks it when a
 * worker looks for work and, during a history turn, after each page (whether the turn goes on: each page is a
 * turn of the rule).
 *
 * The rule is deficit round robin over kinds of work (issue 32): each kind has a guaranteed share of the turns
 * (history: api.rateLimit.backfillShare, the same share the rate limiter owes history's requests; live: the
 * rest). When several kinds wait for a worker, each is credited its share and the kind owed most takes the turn
 * and pays one (ties: live, the present first). A kind with nothing waiting is credited nothing and its credit
 * is cleared (no banking while idle), and a kind alone waiting takes the turn without paying: an unused share
 * is borrowed by the others. So live polls alone filling the workers no longer starve history (review L1): it
 * still gets `backfillShare` of the turns. History also runs in at most half the slots (at least one), so a
 * location falling due finds a free worker while history pages commit.
 */

export type TurnKind = 'live' | 'history';

export const TURN_KINDS: readonly TurnKind[] = ['live', 'history'];

/** Each kind's guaranteed share of the turns (0..1, summing to 1). */
export type TurnShares = Readonly<Record<TurnKind, number>>;

/** Each kind's credit in turns: grows by its share while it waits beside another kind, pays 1 per turn. */
export type TurnDeficits = Readonly<Record<TurnKind, number>>;

export const NO_DEFICITS: TurnDeficits = { live: 0, history: 0 };

/** The shares from history's guaranteed share (api.rateLimit.backfillShare); live has the rest. */
export function turnShares(historyShare: number): TurnShares {
  if (!(historyShare >= 0 && historyShare <= 1)) throw new RangeError('the history share must be in 0..1');
  return { live: 1 - historyShare, history: historyShare };
}

export interface WorkNow {
  /** Work of each kind waits for a worker (live: a location due now; history: a history page ready). */
  waiting: Readonly<Record<TurnKind, boolean>>;
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
      work.waiting[kind] &&
      (kind !== 'history' || work.historyTurns < historySlots(work.maxLocationsInFlight)),
  );
  // Idle kinds bank nothing.
  const kept: Record<TurnKind, number> = { live: 0, history: 0 };
  for (const kind of eligible) kept[kind] = deficits[kind];
  if (eligible.length === 0) return { kind: null, deficits: kept };
  if (eligible.length === 1) return { kind: eligible[0] as TurnKind, deficits: kept };
  let owed: TurnKind = eligible[0] as TurnKind;
  for (const kind of eligible) {
    kept[kind] += shares[kind];
    if (kept[kind] > kept[owed]) owed = kind;
  }
  kept[owed] -= 1;
  return { kind: owed, deficits: kept };
}
