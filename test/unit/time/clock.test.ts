/** The timers built on the Clock's sleep, driven by a manual clock; and the system clock's unref'd sleep. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  startTimer,
  systemClock,
  TIMED_OUT,
  timeoutSignal,
  wallTimer,
  withTimeout,
} from '../../../src/time/clock.js';
import { ManualClock } from '../../support/clock.js';

describe('startTimer', () => {
  it('calls back once when its time has passed on the clock', async () => {
    const clock = new ManualClock();
    const fired: number[] = [];
    startTimer(clock, 1_000, () => fired.push(clock.now()));
    await clock.sleeping();
    clock.advance(999);
    await Promise.resolve();
    expect(fired).toEqual([]);
    clock.advance(1);
    await Promise.resolve();
    expect(fired).toEqual([1_000]);
  });

  it('never calls back once cancelled, and leaves no wait pending', async () => {
    const clock = new ManualClock();
    let fired = false;
    const timer = startTimer(clock, 1_000, () => (fired = true));
    timer.cancel();
    await Promise.resolve();
    clock.advance(5_000);
    await Promise.resolve();
    expect(fired).toBe(false);
    expect(clock.pending).toBe(0);
  });

  it("arms the clock's own timer when it has one, without a sleep", () => {
    const clock = new ManualClock();
    const sleep = vi.spyOn(clock, 'sleep');
    const timer = startTimer(clock, 1_000, () => undefined);
    expect(clock.pending).toBe(1);
    expect(sleep).not.toHaveBeenCalled();
    timer.cancel();
    expect(clock.pending).toBe(0);
  });

  it('is built on sleep for a clock without a timer, and fires and cancels the same', async () => {
    const manual = new ManualClock();
    const sleepOnly = {
      now: () => manual.now(),
      random: () => manual.random(),
      sleep: (ms: number, signal?: AbortSignal) => manual.sleep(ms, signal),
    };
    const fired: number[] = [];
    startTimer(sleepOnly, 1_000, () => fired.push(manual.now()));
    const cancelled = startTimer(sleepOnly, 1_000, () => fired.push(-1));
    cancelled.cancel();
    await manual.sleeping();
    manual.advance(1_000);
    await new Promise((resolve) => setImmediate(resolve));
    expect(fired).toEqual([1_000]);
    expect(manual.pending).toBe(0);
  });
});

describe('systemClock.timer', () => {
  it('calls back after its time, once, and never once cancelled', async () => {
    const fired: string[] = [];
    systemClock.timer?.(1, () => fired.push('kept'));
    const cancel = systemClock.timer?.(1, () => fired.push('cancelled'), { unref: true });
    cancel?.();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(fired).toEqual(['kept']);
  });
});

describe('withTimeout', () => {
  it("passes the work's value on when it settles first, cancelling the timer", async () => {
    const clock = new ManualClock();
    expect(await withTimeout(clock, Promise.resolve('done'), 1_000)).toBe('done');
    expect(clock.pending).toBe(0);
  });

  it("passes the work's rejection on as it is", async () => {
    const clock = new ManualClock();
    const failure = new Error('refused');
    await expect(withTimeout(clock, Promise.reject(failure), 1_000)).rejects.toBe(failure);
  });

  it('answers TIMED_OUT when the time passes on the clock first', async () => {
    const clock = new ManualClock();
    const outcome = withTimeout(clock, new Promise<never>(() => undefined), 1_000);
    await clock.sleeping();
    clock.advance(1_000);
    expect(await outcome).toBe(TIMED_OUT);
  });
});

describe('timeoutSignal', () => {
  it('aborts with a TimeoutError, as AbortSignal.timeout does, once its time passes on the clock', async () => {
    const clock = new ManualClock();
    const { signal } = timeoutSignal(clock, 2_000);
    await clock.sleeping();
    clock.advance(1_999);
    await Promise.resolve();
    expect(signal.aborted).toBe(false);
    clock.advance(1);
    await Promise.resolve();
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toMatchObject({ name: 'TimeoutError' });
  });

  it('never aborts once cancelled', async () => {
    const clock = new ManualClock();
    const deadline = timeoutSignal(clock, 2_000);
    deadline.cancel();
    await Promise.resolve();
    clock.advance(2_000);
    await Promise.resolve();
    expect(deadline.signal.aborted).toBe(false);
    expect(clock.pending).toBe(0);
  });
});

describe('systemClock.sleep', () => {
  it('waits with an unref option and stops early when its signal aborts', async () => {
    const controller = new AbortController();
    const sleeping = systemClock.sleep(60_000, controller.signal, { unref: true });
    controller.abort(new Error('stopped'));
    await expect(sleeping).rejects.toMatchObject({ name: 'AbortError' });
  });
});

describe('wallTimer', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('calls back once its time has passed on the wall clock, whatever an injected clock does', () => {
    vi.useFakeTimers();
    const clock = new ManualClock();
    let fired = 0;
    wallTimer(1_000, () => (fired += 1));
    clock.advance(60_000);
    vi.advanceTimersByTime(999);
    expect(fired).toBe(0);
    vi.advanceTimersByTime(1);
    expect(fired).toBe(1);
    vi.advanceTimersByTime(60_000);
    expect(fired).toBe(1);
  });

  it('never calls back once cancelled', () => {
    vi.useFakeTimers();
    let fired = false;
    wallTimer(1_000, () => (fired = true)).cancel();
    vi.advanceTimersByTime(5_000);
    expect(fired).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
  });
});
