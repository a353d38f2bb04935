/**
 * Start-up against a dependency that may be down for a while (the schema registry, the Kafka cluster): the
 * attempt is repeated with capped exponential backoff and a warning per attempt while it fails with a
 * RetriableError, instead of ending the process. Under a supervisor (Kubernetes, systemd, Docker restart
 * policies) an exit would be a crash loop for as long as the dependency is down, and would lose the metrics
 * and /readyz that tell an operator what is wrong. A FatalError (wrong URL,
 * wrong credentials, a setting to fix) and a programmer error still end the start at once.
 *
 * Called by the runtime at start only; while running, each part heals on its own (scheduler, sinks).
 */
import { RetriableError } from '../errors/index.js';
import { retrying } from '../time/backoff.js';
import { systemClock, type Clock } from '../time/clock.js';

export interface AvailabilityWait {
  /** What is waited for, in the warning: "the schema registry", "the Kafka cluster". */
  what: string;
  logger: { warn(details: object, message: string): void };
  /** Aborted (SIGTERM): the wait ends with the last error. */
  signal?: AbortSignal;
  /** Backoff between attempts: from this, doubled up to maxDelayMs (no jitter: one process, one dependency). */
  initialDelayMs?: number;
  maxDelayMs?: number;
  clock?: Pick<Clock, 'sleep' | 'random'>;
}

/** Attempts until one succeeds, a failure is not a RetriableError, or the signal aborts: no bound on attempts. */
export async function waitUntilAvailable<T>(attempt: () => Promise<T>, wait: AvailabilityWait): Promise<T> {
  const policy = {
    initialDelayMs: wait.initialDelayMs ?? 1000,
    maxDelayMs: wait.maxDelayMs ?? 30_000,
    multiplier: 2,
    jitter: 0,
    maxAttempts: Number.POSITIVE_INFINITY,
  };
  // The failure being waited out: an abort during the wait ends with it rather than with the AbortError.
  let waitingOut: RetriableError | undefined;
  try {
    return await retrying(
      policy,
      {
        clock: wait.clock ?? systemClock,
        ...(wait.signal && { signal: wait.signal }),
        retriable: (error) => error instanceof RetriableError && wait.signal?.aborted !== true,
        onRetry: ({ error, waitMs }) => {
          if (error instanceof RetriableError) waitingOut = error; // what `retriable` let through
          wait.logger.warn(
            { code: waitingOut?.code, retryInMs: waitMs, err: error },
            `${wait.what} is not available yet; waiting for it`,
          );
        },
      },
      () => {
        waitingOut = undefined;
        return attempt();
      },
    );
  } catch (error) {
    throw waitingOut ?? error;
  }
}
