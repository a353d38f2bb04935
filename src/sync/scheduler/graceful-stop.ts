/**
 * The scheduler's graceful stop: when `signal` aborts, no new page starts; pages in flight may finish and
 * commit for up to `shutdownTimeoutMs` (a wall timer: real time, whatever the injected clock does), after
 * which `hardStop` aborts them (abandoned before their commit).
 */
import type { Logger } from '../../logging/logger.js';
import { wallTimer, type Timer } from '../../time/clock.js';

export interface GracefulStopOptions {
  /** run()'s stop signal. */
  signal: AbortSignal;
  shutdownTimeoutMs: number;
  /** Aborted at the shutdown timeout: the pages still in flight are abandoned. */
  hardStop: AbortController;
  logger: Logger;
  /** The stop began (at once when `signal` aborted already). */
  onStop: () => void;
}

export interface GracefulStop {
  /** Resolves when the shutdown timeout passed (the pages in flight were abandoned). */
  abandoned: Promise<'abandoned'>;
  /** Stops watching `signal` and cancels the shutdown timer. */
  dispose(): void;
}

/** Watches `signal` for the stop (see the module comment). */
export function gracefulStop(options: GracefulStopOptions): GracefulStop {
  const { signal, shutdownTimeoutMs, hardStop, logger } = options;
  let deadline: Timer | undefined;
  const onStop = () => {
    logger.info({ shutdownTimeoutMs }, 'stopping: finishing pages in flight');
    deadline = wallTimer(shutdownTimeoutMs, () =>
      hardStop.abort(new Error('shutdown timeout: abandoning pages in flight')),
    );
    options.onStop();
  };
  if (signal.aborted) onStop();
  else signal.addEventListener('abort', onStop, { once: true });
  const abandoned = new Promise<'abandoned'>((resolve) => {
    if (hardStop.signal.aborted) resolve('abandoned');
    else hardStop.signal.addEventListener('abort', () => resolve('abandoned'), { once: true });
  });
  return {
    abandoned,
    dispose: () => {
      signal.removeEventListener('abort', onStop);
      deadline?.cancel();
    },
  };
}
