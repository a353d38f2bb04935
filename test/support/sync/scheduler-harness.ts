/**
 * The scheduler's test bench: a Scheduler over scripted locations (scripted-location.ts) with the unit tests'
 * settings (two slots, polls a minute apart, one page a turn, failure backoffs of milliseconds, no log), and
 * `driveUntil`, which moves a ManualClock from one due time to the next until a condition holds, so hours of
 * backoff take no real time and the time of every page is exact.
 */
import { DEFAULT_RETRY_POLICY } from '../../../src/api/retry-policy.js';
import { silentLogger } from '../../../src/logging/logger.js';
import { type ConnectorMetrics } from '../../../src/metrics/metrics.js';
import { testMetrics } from '../metrics.js';
import { DEFAULT_STOPPED_RETRY } from '../../../src/sync/scheduler/health-rule.js';
import type { RateLimitScopes } from '../../../src/sync/ports.js';
import type { ScheduledLocation } from '../../../src/sync/scheduler/scheduled-location.js';
import { Scheduler, type SchedulerSettings } from '../../../src/sync/scheduler/scheduler.js';
import { settles } from '../async.js';
import type { ManualClock } from '../clock.js';

export function testScheduler(options: {
  locations: readonly ScheduledLocation[];
  clock: ManualClock;
  settings?: Partial<SchedulerSettings>;
  dynamic?: boolean;
  /** The locations' rate-limit scopes (grants); one scope never held when not given. */
  scopes?: RateLimitScopes;
}): { scheduler: Scheduler; metrics: ConnectorMetrics } {
  const metrics = testMetrics();
  const scheduler = new Scheduler({
    locations: options.locations,
    dynamic: options.dynamic ?? false,
    settings: {
      maxLocationsInFlight: 2,
      intervalMs: 60_000,
      pagesPerTurn: 1,
      shutdownTimeoutMs: 1_000,
      failureBackoff: { ...DEFAULT_RETRY_POLICY, initialDelayMs: 1, maxDelayMs: 5 },
      stoppedRetry: DEFAULT_STOPPED_RETRY,
      ...options.settings,
    },
    metrics,
    logger: silentLogger(),
    clock: options.clock,
    ...(options.scopes !== undefined && { scopes: options.scopes }),
  });
  return { scheduler, metrics };
}

/** The scheduler runs: `stop()` aborts its signal and waits for `run` to resolve. */
export function started(scheduler: Scheduler): {
  signal: AbortSignal;
  done: Promise<void>;
  stop(): Promise<void>;
} {
  const controller = new AbortController();
  const done = scheduler.run(controller.signal);
  return {
    signal: controller.signal,
    done,
    stop: async () => {
      controller.abort();
      await done;
    },
  };
}

/**
 * Lets the scheduler work until `condition` holds: whenever it is idle (its timer set, no location due now),
 * moves the clock to the earliest due time. Fails naming `what` after `steps` moves.
 */
export async function driveUntil(
  scheduler: Scheduler,
  clock: ManualClock,
  condition: () => boolean,
  what: string,
  steps = 200,
): Promise<void> {
  const nextDue = () => Math.min(...scheduler.status().map((s) => s.nextRunAt ?? Number.POSITIVE_INFINITY));
  // Idle: a worker waits on the timer, and no location waits due now (pages held by the test may run).
  const idle = () => clock.pending > 0 && nextDue() > clock.now();
  for (let step = 0; step <= steps; step++) {
    await settles(() => condition() || idle(), `${what} (or the scheduler idle)`);
    if (condition()) return;
    let next = nextDue();
    if (!Number.isFinite(next)) {
      // A turn may be ending (its bookkeeping a few promise turns behind its page): let it.
      await eventLoopTurns();
      if (condition()) return;
      next = nextDue();
    }
    if (!Number.isFinite(next)) throw new Error(`${what}: nothing is due any more`);
    clock.advance(next - clock.now());
  }
  throw new Error(`${what}: not after ${steps} moves of the clock`);
}

/** Lets the event loop turn `count` times (no time passes): for asserting that something did not happen. */
export async function eventLoopTurns(count = 20): Promise<void> {
  for (let i = 0; i < count; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** Moves the clock `total` ms forward in steps of `step`, letting the scheduler work between steps. */
export async function runFor(clock: ManualClock, total: number, step: number): Promise<void> {
  for (let moved = 0; moved < total; moved += step) {
    await eventLoopTurns();
    clock.advance(step);
  }
  await eventLoopTurns();
}

/** A location uid numbered `n`. */
export const loc = (n: number): string => `00000000-0000-0000-0000-${String(n).padStart(12, '0')}`;
