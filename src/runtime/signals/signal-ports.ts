/**
 * The interfaces between the signals (kafka/signals/) and the part that runs the locations. They are the
 * scheduler's to read and implement: `PausedLocations` belongs in src/sync/ports.ts beside the other ports the
 * sync core owns (it names no adapter type), and `LocationSignalTarget` is implemented by the runtime's wiring
 * of the Scheduler (runtime/steps/locations.ts and ownership.ts).
 */

/**
 * Whether a location is paused by a `pause` signal (and not resumed since). Read by the scheduler before it
 * starts a location's turn; a paused location finishes the page in flight and starts no other. Null of nothing:
 * every location not paused is polled as configured.
 */
export interface PausedLocations {
  isPaused(locationUid: string): boolean;
}

/** What a signal about one location asks of the instance that runs it (kafka/signals/signal-model.ts). */
export interface LocationSignal {
  /** The signal's id: the outcome to complete, and the header a backfill's re-read records carry. */
  id: string;
  location: string;
  /** backfill: the range to read again (absent since: the location's start; absent until: when accepted). */
  backfill?: { since: string | null; until: string | null };
  /** reset: the offset's new since (null: the offset is removed and the location starts over). */
  reset?: { to: string | null };
}

/**
 * The scheduler's side of backfill and reset signals. The signal answerer (signal-answers.ts) writes the
 * `accepted` outcome, then calls `carryOut`; the signal is `done` when the page that completes it commits, with
 * its outcome record in that page's transaction (kafka/signals/signal-topic.ts outcomeMessage), so a kill -9
 * leaves it accepted and it is handed over again after a restart or a handover: `carryOut` must finish a signal
 * it already started (its state is in the location's offset), never start it twice.
 */
export interface LocationSignalTarget {
  /** Whether this instance runs the location now (it owns the location's offsets partition and writes). */
  runs(locationUid: string): boolean;
  carryOut(signal: LocationSignal): void;
}
