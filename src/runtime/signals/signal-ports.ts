/**
 * The interfaces between the signals (kafka/signals/) and the part that runs the locations: `PausedLocations`,
 * read by the runtime when it picks the locations to run, and `LocationSignalTarget`, implemented by the queue
 * the locations' orchestrators read (signal-queue.ts, sync/ports.ts LocationSignals).
 */
import type { LocationSignal } from '../../sync/ports.js';

export type { LocationSignal } from '../../sync/ports.js';

/**
 * Whether a location is paused by a `pause` signal (and not resumed since). Read by the scheduler before it
 * starts a location's turn; a paused location finishes the page in flight and starts no other. Null of nothing:
 * every location not paused is polled as configured.
 */
export interface PausedLocations {
  isPaused(locationUid: string): boolean;
}

/**
 * The locations' side of backfill and reset signals (signal-queue.ts). The signal answerer (signal-answers.ts)
 * writes the `accepted` outcome, then calls `carryOut`; the signal is `done` when the page that completes it is
 * stored, with its outcome record in that page's transaction (exactly once), so a kill -9 leaves it accepted and
 * it is handed over again after a restart or a handover, and at every later answer: `carryOut` keeps a signal
 * once, and the location finishes one it already started (its id is in the location's offset), never starts it
 * twice.
 */
export interface LocationSignalTarget {
  /**
   * Whether this instance carries out the location's signals now (asked once the answerer knows it owns the
   * location's offsets partition and writes): the running configuration lists it.
   */
  runs(locationUid: string): boolean;
  carryOut(signal: LocationSignal): void;
}
