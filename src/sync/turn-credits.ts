/**
 * The turn policy's state in the scheduler: the shares it was given and the credits (deficits) the policy
 * (turn-policy.ts, pure) moves as turns are taken.
 */
import {
  nextTurn,
  turnShares,
  NO_DEFICITS,
  type TurnDeficits,
  type TurnKind,
  type TurnShares,
} from './turn-policy.js';

/** The work waiting now, as the scheduler sees it (turn-policy.ts WorkNow, less the workers). */
export interface WorkWaiting {
  live: boolean;
  history: boolean;
  /** History turns running now, the asking one not included. */
  historyTurns: number;
}

export class TurnCredits {
  readonly shares: TurnShares;
  private deficits: TurnDeficits = NO_DEFICITS;

  /** `historyShare`: api.rateLimit.backfillShare; `workers`: poll.maxLocationsInFlight. */
  constructor(
    historyShare: number,
    private readonly workers: number,
  ) {
    this.shares = turnShares(historyShare);
  }

  /**
   * Asks the turn policy and keeps its credits, unless the answer is not `keepOnly` (a history turn asking
   * whether it goes on: when it does not, the worker asks again for the turn it takes, which is charged then).
   */
  turnFor(work: WorkWaiting, keepOnly?: TurnKind): TurnKind | null {
    const choice = nextTurn(this.deficits, this.shares, {
      waiting: { live: work.live, history: work.history },
      historyTurns: work.historyTurns,
      maxLocationsInFlight: this.workers,
    });
    if (keepOnly === undefined || choice.kind === keepOnly) this.deficits = choice.deficits;
    return choice.kind;
  }
}
