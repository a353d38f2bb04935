/**
 * Time and chance, injected into the API client, the orchestrator and the scheduler so that their loops
 * are testable without real waits or randomness.
 */
import { setTimeout as sleep } from 'node:timers/promises';

export interface Clock {
  now(): number;
  /** A number in [0, 1), for jitter. */
  random(): number;
  /** Waits `ms`; rejects with the signal's reason when it aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  random: () => Math.random(),
  sleep: async (ms, signal) => {
    await sleep(ms, undefined, signal === undefined ? undefined : { signal });
  },
};
