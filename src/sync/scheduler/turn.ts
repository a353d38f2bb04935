/**
 * The turn policy's state in the scheduler: the shares it was given and the credits (deficits) the policy
 * (turn-rule.ts, pure) moves as turns are taken.
 */
import {
  nextTurn,
  turnShares,
  NO_DEFICITS,
  type GivenShares,
  type TurnDeficits,
  type TurnKind,
  type TurnShares,
} from './turn-rule.js';

/** The work waiting now, as the scheduler sees it (turn-rule.ts WorkNow, less the workers). */
export interface WorkWaiting {
  /** A location due now for a live poll a nudge asked for. */
  nudge: boolean;
  /** A location due now for its scheduled live poll. */
  live: boolean;
  /** A location due now for its first live traversal here (turn-rule.ts `check`); false when not given. */
  check?: boolean;
  /** A history page ready. */
  history: boolean;
  /** History turns running now, the asking one not included. */
  historyTurns: number;
}

export class TurnCredits {
  readonly shares: TurnShares;
  private deficits: TurnDeficits = NO_DEFICITS;

  /**
   * `given`: history's and nudges' guaranteed shares (api.rateLimit.backfillShare, nudgeShare); `workers`:
   * poll.maxLocationsInFlight.
   */
  constructor(
    given: GivenShares,
    private readonly workers: number,
  ) {
    this.shares = turnShares(given);
  }

  /**
   * The share of the turns scheduled live polls (checks included) take while history waits and no nudge does
   * (theirs and the nudges' idle share, borrowed in proportion: turn-rule.ts); what the stretch rule gives
   * live polls.
   */
  get liveShareBesideHistory(): number {
    const { nudge, history } = this.shares;
    const scheduled = Math.max(0, 1 - nudge - history);
    return scheduled + history > 0 ? scheduled / (scheduled + history) : 1;
  }

  /**
   * Asks the turn policy and keeps its credits, unless the answer is not `keepOnly` (a history turn asking
   * whether it goes on: when it does not, the worker asks again for the turn it takes, which is charged then).
   */
  turnFor(work: WorkWaiting, keepOnly?: TurnKind): TurnKind | null {
    const choice = nextTurn(this.deficits, this.shares, {
      waiting: { nudge: work.nudge, live: work.live, check: work.check === true, history: work.history },
      historyTurns: work.historyTurns,
      maxLocationsInFlight: this.workers,
    });
    if (keepOnly === undefined || choice.kind === keepOnly) this.deficits = choice.deficits;
    return choice.kind;
  }
}
