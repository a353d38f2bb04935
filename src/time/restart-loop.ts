/**
 * Keeps one thing running: starts it, and whenever it fails (its start rejects, or it reports a failure later,
 * a crash) records why, hands the failure to `onFailure` (the caller logs it), stops it, waits the backoff's
 * next delay on the injected Clock and starts a new one, until `close()`. The backoff's exponent counts the
 * failures since the thing last ran, so a failure that persists (a missing ACL) is tried less and less often,
 * and one that ran in between starts over from the first delay.
 *
 * What "running" means is the thing's to say (`RestartEvents.running`): a consumer runs once it joined its group,
 * not when its `run()` resolved, so that a consumer that is let in and thrown out again does not reset the wait.
 *
 * Used by the readers of the Kafka topics that must keep reading (kafka/nudges/nudge-reader.ts,
 * kafka/signals/signal-reader.ts) and by the signals channel (runtime/signals/signal-service.ts). The waits are
 * backoff.ts's formula; nothing here sleeps on the wall clock.
 */
import { backoffDelayMs, type Backoff } from './backoff.js';
import { startTimer, type Clock, type Timer } from './clock.js';

/** One attempt's thing, made by `RestartLoopOptions.create`. */
export interface Restartable {
  /** Starts it; a rejection is a failed attempt (the loop then calls `stop`). */
  start(): Promise<void>;
  /**
   * Releases whatever it opened. Called once: after a failure, or by `close()`, possibly while `start` is
   * under way: once both have settled nothing it opened may be left open (a start that gets further after a
   * stop closes what it opened then).
   */
  stop(): Promise<void>;
}

/** What an attempt tells the loop. Calls from an attempt that failed or was closed are ignored. */
export interface RestartEvents {
  /** It runs: the failure is cleared, the backoff starts over, and `ready()` resolves. */
  running(): void;
  /** It stopped running after its start: it is stopped, and a new one started after the backoff's wait. */
  failed(error: unknown): void;
}

export interface RestartFailure {
  /** The last failure, as `describe` words it. */
  reason: string;
  /** How long until the next attempt starts; null while one is starting (not running yet). */
  retryInMs: number | null;
  /** Failures since it last ran (1 for the first). */
  failures: number;
}

export interface RestartLoopOptions {
  /** A new thing, not started yet: one per attempt. */
  create(events: RestartEvents): Restartable;
  /** A failure's text, for `failure()` and `onFailure` (no secrets). */
  describe(error: unknown): string;
  /** Each failure, once, with the wait before the next attempt: the caller logs it. */
  onFailure(failure: { error: unknown; reason: string; failures: number; retryInMs: number }): void;
  /** It runs again after a failure. */
  onRecovered?(): void;
  backoff: Backoff;
  clock: Clock;
}

interface Attempt {
  thing: Restartable;
  /** The attempt's events: what it reports counts only while it is the current attempt. */
  events: RestartEvents;
  started: Promise<void>;
}

export class RestartLoop {
  private current: Attempt | null = null;
  private failures = 0;
  private last: { reason: string; retryAtMs: number | null } | null = null;
  private retry: Timer | undefined;
  /** The stop of the last failed attempt, awaited before the next attempt and by close(). */
  private stopping: Promise<void> = Promise.resolve();
  private closed = false;
  private markReady: () => void = () => undefined;
  private readonly readyPromise = new Promise<void>((resolve) => (this.markReady = resolve));

  constructor(private readonly options: RestartLoopOptions) {}

  /**
   * Starts the first attempt. Resolves once its start has settled, never rejects: a failure is recorded and
   * tried again in the background. Callers that must not wait for the start do not await it.
   */
  start(): Promise<void> {
    return this.attempt();
  }

  /** Resolves once an attempt first runs; never, if none does before `close()`. */
  ready(): Promise<void> {
    return this.readyPromise;
  }

  /** Why it is not running, and when it tries again; null while it runs (or its first attempt starts). */
  failure(): RestartFailure | null {
    const last = this.last;
    if (last === null) return null;
    return {
      reason: last.reason,
      retryInMs: last.retryAtMs === null ? null : Math.max(0, last.retryAtMs - this.options.clock.now()),
      failures: this.failures,
    };
  }

  /** Stops the attempt under way (and waits for its start to settle) or the wait; no attempt follows. */
  async close(): Promise<void> {
    this.closed = true;
    this.retry?.cancel();
    const current = this.current;
    this.current = null;
    await Promise.all([this.stopping, current?.thing.stop(), current?.started]);
  }

  private attempt(): Promise<void> {
    if (this.closed) return Promise.resolve();
    const events: RestartEvents = {
      running: () => {
        if (this.current?.events !== events) return;
        this.failures = 0;
        const recovered = this.last !== null;
        this.last = null;
        if (recovered) this.options.onRecovered?.();
        this.markReady();
      },
      failed: (error) => {
        if (this.current?.events === events) this.fail(this.current, error);
      },
    };
    const thing = this.options.create(events);
    const start = async (): Promise<void> => {
      try {
        await thing.start();
      } catch (error) {
        if (this.current?.events === events) this.fail(this.current, error);
      }
    };
    const attempt: Attempt = { thing, events, started: Promise.resolve() };
    this.current = attempt;
    attempt.started = start();
    return attempt.started;
  }

  private fail(attempt: Attempt, error: unknown): void {
    if (this.closed) return;
    this.current = null;
    this.failures += 1;
    const { backoff, clock } = this.options;
    const waitMs = backoffDelayMs(backoff, this.failures, clock.random());
    const reason = this.options.describe(error);
    this.last = { reason, retryAtMs: clock.now() + waitMs };
    this.options.onFailure({ error, reason, failures: this.failures, retryInMs: waitMs });
    this.stopping = attempt.thing.stop().catch(() => undefined);
    this.retry = startTimer(
      clock,
      waitMs,
      () => {
        if (this.last !== null) this.last = { ...this.last, retryAtMs: null };
        void this.stopping.then(() => this.attempt());
      },
      { unref: true },
    );
  }
}
