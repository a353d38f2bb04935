/**
 * What the signals topic says, folded: every signal read, its latest outcome, the signals still to answer, and
 * which locations are paused. Pure; fed by the signal reader (signal-reader.ts) in the topic's order.
 *
 * The paused state is derived, never stored apart: a location is paused when the last of its pause and resume
 * signals that is `done` is a pause. A location's signals all sit in one partition (signal-topic.ts), read in
 * order, so "last" is the order they were sent in; a pause refused (the location is not configured) or not yet
 * done counts for nothing. Because the topic is compacted by signal id, the fold read from the beginning after a
 * restart or a handover gives the same paused set.
 */
import { isFinal, type Signal, type SignalOutcome, type SignalTopicEntry } from './signal-model.js';

/** A signal record no version of ours can act on, still to be refused. */
export interface InvalidSignal {
  signalId: string;
  problems: string[];
}

export class SignalLedger {
  /** Signals by id, in the order they were read (a Map keeps insertion order). */
  private readonly signals = new Map<string, Signal>();
  private readonly invalid = new Map<string, InvalidSignal>();
  private readonly outcomes = new Map<string, SignalOutcome>();
  /** The ids of the signals read whose outcome is `accepted` (running()), kept by `apply` alone. */
  private readonly runningIds = new Set<string>();
  /**
   * The ids of the signals read without an outcome (unanswered()), in the order first read, kept by `apply`
   * alone: the answerer asks at every entry read, and a filter over every signal ever read made a long
   * signals topic's first read quadratic.
   */
  private readonly unansweredIds = new Set<string>();
  /** pausedLocations() as of the last apply; null once an entry may have changed it. */
  private paused: Set<string> | null = null;

  apply(entry: SignalTopicEntry): void {
    switch (entry.type) {
      case 'signal': {
        const before = this.signals.get(entry.signal.id);
        this.signals.set(entry.signal.id, entry.signal);
        if (pausing(before) || pausing(entry.signal)) this.paused = null;
        this.track(entry.signal.id);
        break;
      }
      case 'invalid-signal':
        this.invalid.set(entry.signalId, { signalId: entry.signalId, problems: entry.problems });
        break;
      case 'outcome': {
        // A final outcome is never replaced by a later `accepted` (a late answer of a former owner).
        const { signalId } = entry.outcome;
        const known = this.outcomes.get(signalId);
        if (known !== undefined && isFinal(known.state) && !isFinal(entry.outcome.state)) break;
        this.outcomes.set(signalId, entry.outcome);
        if (pausing(this.signals.get(signalId))) this.paused = null;
        this.track(signalId);
        break;
      }
    }
  }

  /** Whether the signal `signalId` runs now: read, and its outcome `accepted`. */
  private track(signalId: string): void {
    if (this.signals.has(signalId) && this.outcomes.get(signalId)?.state === 'accepted')
      this.runningIds.add(signalId);
    else this.runningIds.delete(signalId);
    if (this.outcomes.has(signalId)) this.unansweredIds.delete(signalId);
    else if (this.signals.has(signalId)) this.unansweredIds.add(signalId);
  }

  signal(signalId: string): Signal | undefined {
    return this.signals.get(signalId);
  }

  /** The latest outcome of a signal; undefined while it has none. */
  outcome(signalId: string): SignalOutcome | undefined {
    return this.outcomes.get(signalId);
  }

  /** Signals without an outcome yet, in the order they were sent (per location). */
  unanswered(): Signal[] {
    const signals: Signal[] = [];
    for (const id of this.unansweredIds) {
      const signal = this.signals.get(id);
      if (signal !== undefined) signals.push(signal);
    }
    return signals;
  }

  /** Signals accepted and not done yet (a backfill running, or one to be finished after a restart), in the order sent. */
  running(): Signal[] {
    if (this.runningIds.size === 0) return [];
    return [...this.signals.values()].filter((s) => this.runningIds.has(s.id));
  }

  /** How many signals running() holds, in O(1) (the gauge is set from it at every entry read). */
  get runningCount(): number {
    return this.runningIds.size;
  }

  /** Signal records that cannot be acted on and have no outcome yet: each is to be refused. */
  unansweredInvalid(): InvalidSignal[] {
    return [...this.invalid.values()].filter((s) => !this.outcomes.has(s.signalId));
  }

  /** The locations whose last done pause or resume is a pause. */
  pausedLocations(): ReadonlySet<string> {
    if (this.paused !== null) return this.paused;
    const paused = new Set<string>();
    for (const signal of this.signals.values()) {
      if (this.outcomes.get(signal.id)?.state !== 'done') continue;
      const location = signal.location.toLowerCase();
      if (signal.kind === 'pause') paused.add(location);
      else if (signal.kind === 'resume') paused.delete(location);
    }
    this.paused = paused;
    return paused;
  }

  isPaused(locationUid: string): boolean {
    return this.pausedLocations().has(locationUid.toLowerCase());
  }
}

/** Whether a signal counts in pausedLocations(): a pause or a resume (an entry of any other kind changes nothing there). */
function pausing(signal: Signal | undefined): boolean {
  return signal?.kind === 'pause' || signal?.kind === 'resume';
}
