/**
 * Start-up against a dependency that may be down for a while (the schema registry, the Kafka cluster): the
 * attempt is repeated with capped exponential backoff and a warning per attempt while it fails with a
 * RetriableError, instead of ending the process. Under a supervisor (Kubernetes, systemd, Docker restart
 * policies) an exit would be a crash loop for as long as the dependency is down, and would lose the metrics
 * and /readyz that tell an operator what is wrong (both seen by the chaos suite). A FatalError (wrong URL,
 * wrong credentials, a setting to fix) and a programmer error still end the start at once.
 *
 * Called by the runtime at start only; while running, each part heals on its own (scheduler, sinks).
 */
import { RetriableError } from '../errors/index.js';
import { systemClock, type Clock } from '../time/clock.js';

export interface AvailabilityWait {
  /** What is waited for, in the warning: "the schema registry", "the Kafka cluster". */
  what: string;
  logger: { warn(details: object, message: string): void };
  /** Aborted (SIGTERM): the wait ends with the last error. */
  signal?: AbortSignal;
  /** Backoff between attempts: from this, doubled up to maxDelayMs. */
  initialDelayMs?: number;
  maxDelayMs?: number;
  clock?: Pick<Clock, 'sleep'>;
}

export async function waitUntilAvailable<T>(attempt: () => Promise<T>, wait: AvailabilityWait): Promise<T> {
  const clock = wait.clock ?? systemClock;
  let delayMs = wait.initialDelayMs ?? 1000;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof RetriableError) || wait.signal?.aborted === true) throw error;
      wait.logger.warn(
        { code: error.code, retryInMs: delayMs, err: error },
        `${wait.what} is not available yet; waiting for it`,
      );
      await clock.sleep(delayMs, wait.signal).catch(() => {
        throw error;
      });
      delayMs = Math.min(wait.maxDelayMs ?? 30_000, delayMs * 2);
    }
  }
}
