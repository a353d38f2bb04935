/**
 * The signal steps of one location: which of its pending signals (LocationSignals, kept by the runtime) the
 * orchestrator (location-sync.ts) commits next, what that commit is, and when a signal is settled. The rule of
 * what a signal does to the offset is signal-steps-rule.ts; this unit walks the location's signals in order
 * through it. It commits nothing and moves no offset: the orchestrator asks `next` at the start of each page,
 * hands the commit it gets to the commit driver, moves the location to the commit's offset once it is stored
 * (then `stored`), and stops asking when `next` gives null or the commit found another writer's offset.
 *
 * - A signal the offset names already (carried out before: a restart, a takeover) is settled without a commit:
 *   complete unless it is the backfill whose history lane the location still reads.
 * - A backfill while the location reads history already waits: null, and no later signal is looked at.
 * - Otherwise its step is a commit of an offset with no records, completing it (its `done` in the same commit)
 *   when the rule says so.
 */
import type { Logger } from '../../logging/logger.js';
import { logSignalCarriedOut } from './location-log.js';
import { signalStep } from './signal-steps-rule.js';
import type { LocationOffset } from '../model.js';
import type { LocationSignal, LocationSignals, PageCommit } from '../ports.js';

/** One signal's commit, to be made by the orchestrator. */
export interface SignalCommit {
  signal: LocationSignal;
  /** The commit: no records, the signal's offset, its `done` when `done`. */
  commit: PageCommit;
  /** The signal is complete with this commit. */
  done: boolean;
  /** The offset replaces the location's (a reset): its traversals start afresh and its split is decided again. */
  reset: boolean;
  /** The signal's logger (location and signal bound). */
  log: Logger;
}

export interface SignalStepsOptions {
  locationUid: string;
  /** The location's signals; undefined when signals are not taken (nothing is ever pending). */
  signals: LocationSignals | undefined;
  /** Where the location's first traversal starts (settings.startSince): a backfill without `since` reads from it. */
  startSince: string | null;
  logger: Logger;
}

export class SignalSteps {
  constructor(private readonly options: SignalStepsOptions) {}

  /**
   * The next signal to commit for a location at `position` whose stored offset is `committed`; null when none
   * is to be committed now (none pending, or the first one not carried out waits). Settles on the way the
   * signals the offset names already.
   */
  next(position: LocationOffset, committed: LocationOffset): SignalCommit | null {
    const { signals, locationUid, startSince } = this.options;
    if (signals === undefined) return null;
    for (const pending of signals.pending(locationUid)) {
      const step = signalStep(position, pending, startSince);
      if (step.kind === 'wait') return null;
      if (step.kind === 'commit') {
        const { offset, done } = step;
        return {
          signal: pending,
          commit: {
            locationUid,
            calls: [],
            deadLetters: [],
            offset,
            committed,
            ...(done && { signalDone: pending.id }),
          },
          done,
          reset: pending.reset !== undefined,
          log: this.options.logger.child({ location: locationUid, signal: pending.id }),
        };
      }
      // Carried out before: complete, unless its history lane is still to be read (its merge completes it).
      signals.settled(locationUid, pending.id, position.history?.signal !== pending.id);
    }
    return null;
  }

  /** `step`'s commit is stored and the location moved to its offset: the signal is settled. */
  stored(step: SignalCommit): void {
    logSignalCarriedOut(step.log, step.signal, step.commit.offset, step.done);
    this.options.signals?.settled(this.options.locationUid, step.signal.id, step.done);
  }

  /** A page that merged a backfill's history lane is stored: the backfill `signalId` is complete. */
  merged(signalId: string): void {
    this.options.signals?.settled(this.options.locationUid, signalId, true);
  }
}
