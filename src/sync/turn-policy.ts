/**
 * Which kind of turn a worker takes next: the one rule sharing the workers between live work (a location due
 * for its live lane) and history (a split location's backfill, lanes.ts). Pure; the scheduler asks it when a
 * worker looks for work and, during a history turn, after each page (whether the turn goes on).
 *
 * Today's rule: due live work always goes first; history takes a worker only when no live work is due, in at
 * most half the slots (at least one), so a location falling due finds a free worker at once instead of waiting
 * for a history page to finish; and a history turn yields after its page in flight as soon as live work is
 * due. History thus uses what the live lanes leave.
 */

export type TurnKind = 'live' | 'history';

export interface WorkNow {
  /** Live work is due now: a location's live lane waits for a worker (or the history turn's own live lane). */
  liveDue: boolean;
  /** History turns running now, the asking one not included. */
  historyTurns: number;
  /** The scheduler's slots (poll.maxLocationsInFlight). */
  maxLocationsInFlight: number;
}

/**
 * How many history turns may run at once: half the slots (at least one). The others are kept for live work;
 * and fewer history pages at a time each finish sooner, which is what a split location's own live poll waits
 * for.
 */
export function historySlots(maxLocationsInFlight: number): number {
  return Math.max(1, Math.floor(maxLocationsInFlight / 2));
}

/**
 * The kind of turn a worker may take now, or null for none (it parks). A history turn asks it after each page,
 * not counting itself: it goes on only while the answer is still 'history'.
 */
export function nextTurn(work: WorkNow): TurnKind | null {
  if (work.liveDue) return 'live';
  if (work.historyTurns >= historySlots(work.maxLocationsInFlight)) return null;
  return 'history';
}
