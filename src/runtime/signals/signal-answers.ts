/**
 * Answers the signals of the locations this instance owns: the one place that decides a signal's outcome.
 *
 * Fed by the signals topic reader (kafka/signals/signal-reader.ts: `onEntry` is its `each`), it keeps the
 * ledger (kafka/signals/signal-ledger.ts) and, once `caughtUp()` says the reader's first read is complete, answers
 * every signal without an outcome whose partition this instance owns (the partition of the location's offset key:
 * exactly one instance owns it), in the order they were sent:
 * - a location the running configuration does not list: `refused`, LOCATION_NOT_CONFIGURED (a signal for a
 *   location nobody runs is answered, never left waiting);
 * - `pause` / `resume`: `done` at once (the paused state is the ledger's fold of the done ones, read back;
 *   `pausedChanged` tells the runtime, which stops and starts the location);
 * - `backfill` / `reset`: `accepted`, then handed to the location (`LocationSignalTarget.carryOut`), whose page
 *   that completes it writes `done` (sync/location/signal-steps-rule.ts). One such signal at a time per location:
 *   the next is accepted once the one before is done, in the order they were sent, so the location's offset,
 *   which keeps the id of the last one carried out, tells a signal carried out from one still to do;
 * - a record that is no signal this version reads: `refused`, SIGNAL_INVALID, naming the problems.
 * Signals accepted and not done are handed to the target at every answer while this instance owns their location
 * (the target keeps each once): after a restart, a handover, or a kill -9 while one ran, they are finished.
 *
 * Call `answerPending()` again when what this instance owns changes (a rebalance, a standby taking over, a
 * reload): signals it could not answer before are answered then. Answers are written one at a time; a write
 * that fails is logged and tried again on the next call.
 */
import type { Logger } from '../../logging/logger.js';
import type { ConnectorMetrics } from '../../metrics/metrics.js';
import { SignalLedger } from '../../kafka/signals/signal-ledger.js';
import {
  isFinal,
  REFUSALS,
  type OutcomeState,
  type RefusalReason,
  type Signal,
  type SignalOutcome,
  type SignalTopicEntry,
} from '../../kafka/signals/signal-model.js';
import type { Clock } from '../../time/clock.js';
import type { LocationSignal, LocationSignalTarget, PausedLocations } from './signal-ports.js';

export interface SignalsStatus {
  /** Location uids, in lower case. */
  pausedLocations: string[];
  running: Array<Signal & { acceptedBy: string }>;
  /**
   * Why signals are not read now (signal-service.ts: an attempt to open the channel failed, or the reader's
   * consumer stopped, and it is tried again); absent when they are.
   */
  problem?: string;
}

export interface SignalAnswersOptions {
  /** This instance, as outcomes name it (client id and host). */
  instance: string;
  /** The partition of a location's signals (signal-topic.ts). */
  partitionOf: (locationUid: string) => number;
  /** Whether this instance owns the offsets partition `partition` now (and writes). */
  ownsPartition: (partition: number) => boolean;
  /** Whether the running configuration lists the location (read at each answer: a reload changes it). */
  configured: (locationUid: string) => boolean;
  /** Writes an outcome to the partition of its signal. */
  write: (partition: number, outcome: SignalOutcome) => Promise<unknown>;
  /** The locations' side of backfill and reset (signal-queue.ts). */
  target: LocationSignalTarget;
  /** The paused set changed (a done pause or resume read back, or the first read): the runtime applies it. */
  pausedChanged?: () => void;
  clock: Pick<Clock, 'now'>;
  logger: Logger;
  /** The outcomes this instance writes, and the paused locations as the ledger has them. */
  metrics?: Pick<ConnectorMetrics, 'signalOutcomes' | 'pausedLocations' | 'signalsRunning'>;
}

export class SignalAnswers implements PausedLocations {
  readonly ledger = new SignalLedger();
  /** The partition each invalid signal record was read from (its location cannot be read). */
  private readonly invalidPartitions = new Map<string, number>();
  /** Signal ids answered (or handed to the target) by this process, so a signal is not answered twice. */
  private readonly handled = new Set<string>();
  private ready = false;
  private queue: Promise<void> = Promise.resolve();
  /** The paused set as last told (`pausedChanged`), its uids sorted and joined. */
  private pausedBefore = '';

  constructor(private readonly options: SignalAnswersOptions) {}

  /** The reader's `each`. */
  onEntry(entry: SignalTopicEntry, at: { partition: number }): void {
    this.ledger.apply(entry);
    const paused = [...this.ledger.pausedLocations()].sort().join(',');
    this.options.metrics?.pausedLocations.set(this.ledger.pausedLocations().size);
    if (entry.type !== 'invalid-signal') this.options.metrics?.signalsRunning.set(this.ledger.runningCount);
    if (paused !== this.pausedBefore) {
      this.pausedBefore = paused;
      this.options.pausedChanged?.();
    }
    if (entry.type === 'invalid-signal') this.invalidPartitions.set(entry.signalId, at.partition);
    if (this.ready) void this.answerPending();
  }

  /** The reader's first read is complete: answering may begin. */
  caughtUp(): Promise<void> {
    this.ready = true;
    return this.answerPending();
  }

  /** Whether a signal may still need carrying out: no final outcome (done, refused) read for it. */
  isOpen(signalId: string): boolean {
    const known = this.ledger.outcome(signalId);
    return known === undefined || !isFinal(known.state);
  }

  isPaused(locationUid: string): boolean {
    return this.ledger.isPaused(locationUid);
  }

  /** For `/status`: the paused locations and the signals accepted and not done (running). */
  status(): SignalsStatus {
    return {
      pausedLocations: [...this.ledger.pausedLocations()].sort(),
      running: this.ledger
        .running()
        .map(({ id, kind, location, since, until, to, requestedAt, requestedBy }) => ({
          id,
          kind,
          location,
          ...(since !== undefined && { since }),
          ...(until !== undefined && { until }),
          ...(to !== undefined && { to }),
          requestedAt,
          requestedBy,
          acceptedBy: this.ledger.outcome(id)?.instance ?? '',
        })),
    };
  }

  /** Answers what can be answered now; resolves once those answers are written (or failed and logged). */
  answerPending(): Promise<void> {
    this.queue = this.queue.then(() => this.answerNow());
    return this.queue;
  }

  private async answerNow(): Promise<void> {
    if (!this.ready) return;
    const { target, ownsPartition, partitionOf, configured } = this.options;
    for (const invalid of this.ledger.unansweredInvalid()) {
      const partition = this.invalidPartitions.get(invalid.signalId);
      if (partition === undefined || !ownsPartition(partition) || this.handled.has(invalid.signalId))
        continue;
      await this.answer({ id: invalid.signalId, kind: 'invalid' }, partition, 'refused', {
        code: REFUSALS.invalidSignal,
        message: `not a signal this version can act on: ${invalid.problems.join('; ')}`,
      });
    }
    const running = this.ledger.running();
    // Locations with a backfill or reset running, or one waiting before a later one: a later one waits.
    const busy = new Set(running.map((s) => s.location.toLowerCase()));
    for (const signal of this.ledger.unanswered()) {
      const partition = partitionOf(signal.location);
      if (!ownsPartition(partition) || this.handled.has(signal.id)) continue;
      if (!configured(signal.location)) {
        await this.answer(signal, partition, 'refused', {
          code: REFUSALS.locationNotConfigured,
          message:
            `location ${signal.location} is not in the configuration of ${this.options.instance}, the instance ` +
            'that owns its partition: add it to sources[].locations (and reload), or check the uid',
        });
      } else if (signal.kind === 'pause' || signal.kind === 'resume') {
        await this.answer(signal, partition, 'done');
      } else if (busy.has(signal.location.toLowerCase()) || !target.runs(signal.location)) {
        busy.add(signal.location.toLowerCase());
      } else {
        busy.add(signal.location.toLowerCase());
        const accepted = await this.answer(signal, partition, 'accepted');
        if (accepted !== null) target.carryOut(locationSignal(signal, accepted.at));
      }
    }
    // Accepted (now, before a restart, or by the location's former owner) and not done: carried out here.
    for (const signal of running) {
      const acceptedAt = this.ledger.outcome(signal.id)?.at;
      if (acceptedAt === undefined || !ownsPartition(partitionOf(signal.location))) continue;
      if (!target.runs(signal.location)) continue;
      target.carryOut(locationSignal(signal, acceptedAt));
    }
  }

  /**
   * A signal's effect is stored in full (sync/ports.ts LocationSignals.settled). `written`: its `done` went with
   * the page (exactly once), counted and logged here; otherwise it is written now, unless an outcome read back is
   * final already (a duplicate `done` after a takeover is harmless: outcomes are keyed by signal id).
   */
  completed(signalId: string, written: boolean): Promise<void> {
    this.queue = this.queue.then(async () => {
      const signal = this.ledger.signal(signalId);
      if (signal === undefined || !this.isOpen(signalId)) return;
      if (!written) {
        await this.answer(signal, this.options.partitionOf(signal.location), 'done');
        return;
      }
      this.options.metrics?.signalOutcomes.inc({ kind: signal.kind, state: 'done' });
      this.options.logger.info({ signal: signal.id, kind: signal.kind, state: 'done' }, 'signal done');
    });
    return this.queue;
  }

  /** Writes an outcome; null when the write failed (logged; the next answerPending tries again). */
  private async answer(
    signal: { id: string; kind: string },
    partition: number,
    state: OutcomeState,
    reason?: RefusalReason,
  ): Promise<SignalOutcome | null> {
    const outcome: SignalOutcome = {
      signalId: signal.id,
      state,
      ...(reason !== undefined && { reason }),
      at: new Date(this.options.clock.now()).toISOString(),
      instance: this.options.instance,
    };
    this.handled.add(signal.id);
    try {
      await this.options.write(partition, outcome);
    } catch (error) {
      this.handled.delete(signal.id);
      this.options.logger.warn(
        { err: error, signal: signal.id, state },
        'signal outcome not written: tried again at the next signal or ownership change',
      );
      return null;
    }
    this.options.metrics?.signalOutcomes.inc({ kind: signal.kind, state });
    this.options.logger.info(
      { signal: signal.id, kind: signal.kind, state, ...(reason !== undefined && { reason: reason.code }) },
      `signal ${state}`,
    );
    return outcome;
  }
}

function locationSignal(signal: Signal, acceptedAt: string): LocationSignal {
  const base = { id: signal.id, location: signal.location, acceptedAt };
  if (signal.kind === 'backfill')
    return { ...base, backfill: { since: signal.since ?? null, until: signal.until ?? null } };
  return { ...base, reset: { to: signal.to ?? null } };
}
