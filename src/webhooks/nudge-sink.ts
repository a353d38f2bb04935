/**
 * Where a taken nudge goes (the port the receiver hands each resolved nudge to), and the sinks that are not the
 * scheduler's own (that one is scheduler-nudges.ts):
 * - single mode, `refusedWhileStandingBy`: a standby refuses, so the sender retries onto the writer;
 * - distributed mode, `relayedNudgeSink`: each location's nudge is written to the nudge topic, which every
 *   instance reads, and the one that owns the location acts on it (scheduler-nudges.ts, `ownedLocationNudge`);
 *   the delivery's replay key goes with it, into every instance's replay window (replay-window.ts);
 * - a receiver with no scheduler (tests, tools), `loggingNudgeSink`: taken and logged only.
 */
import { RetriableError } from '../errors/index.js';
import type { Logger } from '../logging/logger.js';
import type { ResolvedNudge } from './nudge-resolution.js';

/**
 * Contract: `offer` resolves once the nudge is taken (queued or written, never polled); it rejects when the
 * nudge cannot be taken now (the receiver answers 503 and the sender retries). `replay`, the delivery's replay
 * key (absent when unsigned deliveries are allowed), is for a sink that shares it with other instances.
 */
export interface NudgeSink {
  offer(nudge: ResolvedNudge, replay?: SharedReplayKey): Promise<void>;
}

/**
 * A delivery's replay key as other instances' replay windows take it (replay-window.ts `recordShared`): kept
 * from `atMs`, when the receiving instance verified the delivery.
 */
export interface SharedReplayKey {
  key: string;
  atMs: number;
}

/** One location's nudge as the nudge topic carries it (kafka/nudges/nudge-topic.ts). */
export interface LocationNudge {
  location: string;
  uid: string;
  event: string;
}

/** Refuses every nudge while `standingBy()` (the receiver answers 503 with Retry-After), else hands it on. */
export function refusedWhileStandingBy(sink: NudgeSink, standingBy: () => boolean): NudgeSink {
  return {
    offer: (nudge, replay) =>
      standingBy()
        ? Promise.reject(
            new RetriableError(
              'WEBHOOK_STANDING_BY',
              'this instance stands by: the writing instance takes deliveries (retry)',
            ),
          )
        : sink.offer(nudge, replay),
  };
}

/**
 * A nudge written as one record per location, with the delivery's replay key for every instance's replay window
 * (`write` resolves once all are durable; a failed write rejects, so the delivery is answered 503 and retried).
 */
export function relayedNudgeSink(topic: {
  write(nudges: readonly LocationNudge[], replay?: SharedReplayKey): Promise<void>;
}): NudgeSink {
  return {
    offer: (nudge, replay) =>
      topic.write(
        nudge.locations.map((location) => ({ location, uid: nudge.uid, event: nudge.event })),
        replay,
      ),
  };
}

/** A sink that takes every nudge at once and only logs it. */
export function loggingNudgeSink(logger: Logger): NudgeSink {
  return {
    offer: async (nudge) => {
      logger.debug(
        {
          uid: nudge.uid,
          event: nudge.event,
          locations: nudge.locations.length,
          resolution: nudge.resolution,
        },
        'webhook nudge taken (logged only)',
      );
    },
  };
}
