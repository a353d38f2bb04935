/**
 * The NudgeSink of an instance that schedules the nudged locations itself (single mode): each location a
 * nudge names is handed to the scheduler's `nudge` (its live poll due now, coalesced), and the delivery is
 * noted in the ledger (delivery-ledger.ts) so the publish it leads to is timed and not counted as missed.
 * A location the scheduler does not know (not owned here) is counted (`unknown`) and the delivery is still
 * acknowledged: the poll of its owner is the safety net. Taking a nudge never waits on a poll.
 */
import type { ConnectorMetrics } from '../metrics/metrics.js';
import type { NudgeOutcome } from '../sync/scheduler/scheduler.js';
import type { NudgeSink } from './nudge-sink.js';

/** The scheduler's nudge port. */
export interface NudgeTarget {
  nudge(locationUid: string): NudgeOutcome;
}

export interface SchedulerNudgeOptions {
  target: NudgeTarget;
  metrics: Pick<ConnectorMetrics, 'webhookNudgeOutcomes'>;
  /** Notes each delivery's uid (delivery-ledger.ts). */
  ledger?: { announced(uid: string): void };
}

/**
 * For a nudge read from the nudge topic (distributed mode), which every instance reads: only the instance
 * whose scheduler runs the location acts on it, notes it and counts it; the others skip it silently.
 */
export function ownedLocationNudge(
  options: SchedulerNudgeOptions,
): (nudge: { uid: string; location: string }) => void {
  const { target, metrics, ledger } = options;
  return ({ uid, location }) => {
    const outcome = target.nudge(location);
    if (outcome === 'unknown') return;
    ledger?.announced(uid);
    metrics.webhookNudgeOutcomes.inc({ outcome });
  };
}

export function schedulerNudgeSink(options: SchedulerNudgeOptions): NudgeSink {
  const { target, metrics, ledger } = options;
  return {
    offer: (nudge) => {
      ledger?.announced(nudge.uid);
      for (const location of nudge.locations)
        metrics.webhookNudgeOutcomes.inc({ outcome: target.nudge(location) });
      return Promise.resolve();
    },
  };
}
