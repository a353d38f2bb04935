import { describe, expect, it } from 'vitest';
import { IntervalStretch } from '../../../../src/sync/scheduler/stretch.js';
import { limiterWaitBegan, measuringLimiterWaits } from '../../../../src/sync/scheduler/limiter-wait.js';
import { ManualClock } from '../../../support/clock.js';
import { capturingLogger } from '../../../support/logger.js';
import { eventLoopTurns } from '../../../support/sync/scheduler-harness.js';

const setUp = (options: { ratePerSecond?: number | null; workers?: number; locations?: number } = {}) => {
  const clock = new ManualClock(1_000_000);
  const gauge: number[] = [];
  const shorter: number[] = [];
  const log = capturingLogger();
  const context = { locations: options.locations ?? 4, liveShare: 1 };
  const stretch = new IntervalStretch({
    configuredMs: 1_000,
    workers: options.workers ?? 4,
    scopes: { ratePerSecond: () => options.ratePerSecond ?? null },
    metrics: { pollEffectiveInterval: { set: (seconds) => gauge.push(seconds) } },
    logger: log.logger,
    clock,
    context: () => context,
    onShorter: (ms) => shorter.push(ms),
  });
  const said = () => log.lines().map((line) => [line['level'], line['msg']]);
  /** A live page of `ms` on the clock (of which `waitMs` waiting for the limiter), published something. */
  const page = async (ms: number, waitMs = 0, progressed = true) => {
    const timer = stretch.pageStarted();
    await measuringLimiterWaits(timer.limiterWaits, async () => {
      const ended = limiterWaitBegan();
      clock.advance(waitMs);
      ended();
      clock.advance(ms - waitMs);
    });
    stretch.pageEnded(timer, progressed);
  };
  return { clock, stretch, gauge, said, context, page, shorter };
};

describe('IntervalStretch', () => {
  it('starts at the configured interval, gauge included', () => {
    const { stretch, gauge } = setUp();
    expect(stretch.intervalMs).toBe(1_000);
    expect(gauge).toEqual([1]);
  });

  it("stretches to what the scope's rate allows the locations it counts, warning once", async () => {
    const { stretch, gauge, said, context, page } = setUp({ ratePerSecond: 10 });
    for (let i = 0; i < 20; i++) stretch.locationAdded('grant-a');
    context.locations = 20;
    // 20 locations of one grant at 10 requests/s: every 2 s at best.
    await page(10);
    await page(10);
    expect(stretch.intervalMs).toBe(2_000);
    expect(gauge.at(-1)).toBe(2);
    expect(said()).toEqual([[40, expect.stringContaining('live polls alone exceed')]]);
  });

  it('says once that polls are back at the configured interval when locations leave', async () => {
    const { stretch, said, context, page } = setUp({ ratePerSecond: 10 });
    for (let i = 0; i < 20; i++) stretch.locationAdded('grant-a');
    context.locations = 20;
    await page(10);
    for (let i = 0; i < 15; i++) stretch.locationRemoved('grant-a');
    context.locations = 5;
    await page(10);
    expect(stretch.intervalMs).toBe(1_000);
    expect(said()).toEqual([
      [40, expect.stringContaining('live polls alone exceed')],
      [30, 'polls are back at poll.intervalMs'],
    ]);
  });

  it('does not count the time a page waited for the rate limiter as worker demand', async () => {
    // 2 workers, 8 locations, pages of 5 s of which 4.9 s waiting for the limiter, back to back on both.
    const { stretch, page } = setUp({ workers: 2, locations: 8 });
    for (let i = 0; i < 10; i++) await Promise.all([page(5_000, 4_900), page(5_000, 4_900)]);
    expect(stretch.workerFactor).toBe(1);
    expect(stretch.intervalMs).toBe(1_000);
  });

  it('does not count a page that made no progress (a restarted cursor and its re-reading)', async () => {
    const { stretch, page } = setUp({ workers: 1, locations: 8 });
    await page(80_000, 0, false);
    expect(stretch.intervalMs).toBe(1_000);
  });

  it('stretches when the workers are busy with live pages beyond live share, and recovers on the clock with no page ending', async () => {
    const { clock, stretch, page, shorter, context } = setUp({ workers: 1, locations: 8 });
    context.liveShare = 0.5;
    // One worker busy with live pages all the time: twice live's share.
    for (let i = 0; i < 20; i++) await page(500);
    const stretched = stretch.intervalMs;
    expect(stretched).toBeGreaterThanOrEqual(2_000);
    // Nothing runs from now on: the timer works the interval out again, on the clock alone.
    for (let i = 0; i < 16; i++) {
      clock.advance(500);
      await eventLoopTurns(2);
    }
    expect(stretch.intervalMs).toBe(1_000);
    expect(shorter.at(-1)).toBe(1_000);
    stretch.dispose();
    expect(clock.pending).toBe(0);
  });
});
