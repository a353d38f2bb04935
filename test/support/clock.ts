/**
 * Clocks for tests: `clockReading` replaces only the reading of the time (sleeps and random numbers stay
 * real); `ManualClock` is all virtual: time moves only when the test advances it, and every sleep and
 * timer built on the Clock (src/time/clock.ts) fires then, in due order; `RecordingClock` waits no time and
 * records every sleep.
 */
import { systemClock, type Clock, type SleepOptions } from '../../src/time/clock.js';

/** The system clock, reading the time from `now`. */
export function clockReading(now: () => number): Clock {
  return { ...systemClock, now };
}

interface Sleeper {
  ms: number;
  until: number;
  resolve: () => void;
}

/** A clock whose time a test moves; random() is fixed. */
export class ManualClock implements Clock {
  private sleepers: Sleeper[] = [];
  private sleepStarted: (() => void)[] = [];
  /** The duration of every sleep asked for, in order. */
  readonly sleeps: number[] = [];

  constructor(
    private at = 0,
    private readonly randomValue = 0,
  ) {}

  now(): number {
    return this.at;
  }

  random(): number {
    return this.randomValue;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    this.sleeps.push(ms);
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    return new Promise<void>((resolve, reject) => {
      const sleeper: Sleeper = { ms, until: this.at + Math.max(0, ms), resolve };
      this.sleepers.push(sleeper);
      signal?.addEventListener(
        'abort',
        () => {
          this.sleepers = this.sleepers.filter((s) => s !== sleeper);
          reject(signal.reason as Error);
        },
        { once: true },
      );
      for (const started of this.sleepStarted.splice(0)) started();
    });
  }

  /**
   * A timer is a sleep without a promise: counted, recorded and woken like one; its callback runs a microtask
   * after the advance that wakes it, as a sleep's continuation would.
   */
  timer(ms: number, callback: () => void, _options?: SleepOptions): () => void {
    this.sleeps.push(ms);
    let cancelled = false;
    const sleeper: Sleeper = {
      ms,
      until: this.at + Math.max(0, ms),
      resolve: () =>
        queueMicrotask(() => {
          if (!cancelled) callback();
        }),
    };
    this.sleepers.push(sleeper);
    for (const started of this.sleepStarted.splice(0)) started();
    return () => {
      cancelled = true;
      this.sleepers = this.sleepers.filter((s) => s !== sleeper);
    };
  }

  /** How many sleeps (and timers) are pending. */
  get pending(): number {
    return this.sleepers.length;
  }

  /** Resolves once at least `count` sleeps are pending: a test's way to wait for code to reach a wait. */
  async sleeping(count = 1): Promise<void> {
    while (this.sleepers.length < count) await new Promise<void>((r) => this.sleepStarted.push(r));
  }

  /** Resolves once a sleep of `ms` is pending (when other waits, such as deadlines, are pending too). */
  async sleepingFor(ms: number): Promise<void> {
    while (!this.sleepers.some((s) => s.ms === ms)) {
      await new Promise<void>((r) => this.sleepStarted.push(r));
    }
  }

  /** Moves the time `ms` forward, waking every sleep due by then. */
  advance(ms: number): void {
    this.at += ms;
    const due = this.sleepers.filter((s) => s.until <= this.at).sort((a, b) => a.until - b.until);
    this.sleepers = this.sleepers.filter((s) => s.until > this.at);
    for (const sleeper of due) sleeper.resolve();
  }
}

/**
 * A clock on which waiting takes no time: every sleep resolves at once (rejects if its signal is aborted) and
 * is recorded; the time stays at `at` and random() is fixed. For retry loops whose waits a test asserts.
 */
export class RecordingClock implements Clock {
  /** The duration of every sleep asked for, in order. */
  readonly sleeps: number[] = [];

  constructor(
    private readonly at = 0,
    private readonly randomValue = 0.5,
  ) {}

  now(): number {
    return this.at;
  }

  random(): number {
    return this.randomValue;
  }

  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    this.sleeps.push(ms);
  }
}
