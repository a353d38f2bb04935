/**
 * Time and chance, injected into the API client, the orchestrator, the scheduler, the sinks and the ops
 * server so that their loops and deadlines are testable without real waits or randomness.
 *
 * The Clock has one waiting primitive, `sleep(ms, signal)`, and may have a cheaper one for callbacks,
 * `timer(ms, callback)`; the timers below (`startTimer`, `withTimeout`, `timeoutSignal`) use `timer` when the
 * clock has it and are built on `sleep` when not, so a test clock that drives `sleep` (test/support/clock.ts)
 * drives every timer too, and a Clock is still three members to implement. Product code outside src/time/ uses these,
 * never the global setTimeout, setInterval, AbortSignal.timeout, Date.now or new Date() (the lint enforces
 * it; eslint.config.js lists the files still excepted and why). `wallTimer` is the one raw timer, named so.
 */
import { setTimeout as sleep } from 'node:timers/promises';

export interface Clock {
  now(): number;
  /** A number in [0, 1), for jitter. */
  random(): number;
  /**
   * Waits `ms`; rejects when the signal aborts (the system clock with an AbortError). With `unref`, the wait does not keep
   * the process alive (a deadline on work that keeps the process alive itself, or not).
   */
  sleep(ms: number, signal?: AbortSignal, options?: SleepOptions): Promise<void>;
  /**
   * Optional: calls `callback` once after `ms`, unless the returned function (cancel) is called first; the
   * same as `sleep` then `callback`, without a promise or a signal (a timer armed once per poll costs a few µs,
   * not 40). A clock that drives `sleep` and lacks this drives startTimer through `sleep` instead.
   */
  timer?(ms: number, callback: () => void, options?: SleepOptions): () => void;
}

export interface SleepOptions {
  unref?: boolean;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  random: () => Math.random(),
  sleep: async (ms, signal, options) => {
    await sleep(ms, undefined, {
      ...(signal === undefined ? {} : { signal }),
      ...(options?.unref === true ? { ref: false } : {}),
    });
  },
  timer: (ms, callback, options) => {
    const timer = setTimeout(callback, ms);
    if (options?.unref === true) timer.unref();
    return () => clearTimeout(timer);
  },
};

/** A running timer: `cancel()` stops it (no effect once it fired). */
export interface Timer {
  cancel(): void;
}

/**
 * Calls `callback` once after `ms` on `clock`, unless cancelled first. Like the global setTimeout, the
 * pending timer keeps the process alive unless `unref`; cancel it when its work is done.
 */
export function startTimer(
  clock: Clock,
  ms: number,
  callback: () => void,
  options: SleepOptions = {},
): Timer {
  if (clock.timer !== undefined) return { cancel: clock.timer(ms, callback, options) };
  const controller = new AbortController();
  clock.sleep(ms, controller.signal, options).then(
    () => {
      if (!controller.signal.aborted) callback();
    },
    () => undefined, // cancelled
  );
  return { cancel: () => controller.abort() };
}

/**
 * A timer on the wall clock, NOT on an injected Clock: a test's clock does not move it. Only for deadlines
 * that must pass in real time whatever a virtual clock does (a graceful stop's bound), and for the hottest
 * timers, where a plain timer cleared when the work ends is the cheapest (the API's per-request deadline:
 * one per idle poll; Node keeps timers of one duration in one list, arming and clearing are O(1)). It never
 * keeps the process alive.
 */
export function wallTimer(ms: number, callback: () => void): Timer {
  const timer = setTimeout(callback, ms);
  timer.unref();
  return { cancel: () => clearTimeout(timer) };
}

/**
 * A signal for a deadline on I/O (an HTTP request): it aborts after `ms` on `clock` with a TimeoutError,
 * as AbortSignal.timeout does, unless cancelled. Its wait does not keep the process alive; cancel it when
 * the work ended first.
 */
export function timeoutSignal(clock: Clock, ms: number): { signal: AbortSignal; cancel(): void } {
  const controller = new AbortController();
  const timer = startTimer(
    clock,
    ms,
    () => controller.abort(new DOMException(`timed out after ${ms} ms`, 'TimeoutError')),
    { unref: true },
  );
  return { signal: controller.signal, cancel: () => timer.cancel() };
}

/** What withTimeout returns when the time ran out first. */
export const TIMED_OUT: unique symbol = Symbol('timed out');

/**
 * `work`'s value, or TIMED_OUT when `ms` pass on `clock` before it settles; `work`'s rejection passes
 * through. The timer is cancelled either way; `work` itself is not (the caller decides what to abandon).
 */
export async function withTimeout<T>(
  clock: Clock,
  work: Promise<T>,
  ms: number,
  options: SleepOptions = {},
): Promise<T | typeof TIMED_OUT> {
  let timer: Timer | undefined;
  const timedOut = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = startTimer(clock, ms, () => resolve(TIMED_OUT), options);
  });
  try {
    return await Promise.race([work, timedOut]);
  } finally {
    timer?.cancel();
  }
}
