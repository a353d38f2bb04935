import { describe, expect, it } from 'vitest';
import { IntervalStretch } from '../../../src/sync/interval-stretch.js';
import { capturingLogger } from '../../support/logger.js';

const setUp = (ratePerSecond: number | null = 10) => {
  const gauge: number[] = [];
  const log = capturingLogger();
  const stretch = new IntervalStretch({
    configuredMs: 1_000,
    workers: 4,
    scopes: { ratePerSecond: () => ratePerSecond },
    metrics: { pollEffectiveInterval: { set: (seconds) => gauge.push(seconds) } },
    logger: log.logger,
  });
  const said = () => log.lines().map((line) => [line['level'], line['msg']]);
  return { stretch, gauge, said };
};

describe('IntervalStretch', () => {
  it('starts at the configured interval, gauge included', () => {
    const { stretch, gauge } = setUp();
    expect(stretch.intervalMs).toBe(1_000);
    expect(gauge).toEqual([1]);
  });

  it("stretches to what the scope's rate allows the locations it counts, warning once", () => {
    const { stretch, gauge, said } = setUp(10);
    for (let i = 0; i < 20; i++) stretch.locationAdded('grant-a');
    // 20 locations of one grant at 10 requests/s: every 2 s at best.
    stretch.liveTurnEnded(10, { locations: 20, liveShare: 1 });
    stretch.liveTurnEnded(10, { locations: 20, liveShare: 1 });
    expect(stretch.intervalMs).toBe(2_000);
    expect(gauge.at(-1)).toBe(2);
    expect(said()).toHaveLength(1);
    expect(said()[0]?.[0]).toBe(40);
  });

  it('says once that polls are back at the configured interval when locations leave', () => {
    const { stretch, said } = setUp(10);
    for (let i = 0; i < 20; i++) stretch.locationAdded('grant-a');
    stretch.liveTurnEnded(10, { locations: 20, liveShare: 1 });
    for (let i = 0; i < 15; i++) stretch.locationRemoved('grant-a');
    stretch.liveTurnEnded(10, { locations: 5, liveShare: 1 });
    stretch.liveTurnEnded(10, { locations: 5, liveShare: 1 });
    expect(stretch.intervalMs).toBe(1_000);
    expect(said()).toEqual([
      [40, expect.stringContaining('live polls alone exceed')],
      [30, 'polls are back at poll.intervalMs'],
    ]);
  });

  it('leaves history its share: stretches further while history waits', () => {
    const { stretch } = setUp(10);
    for (let i = 0; i < 10; i++) stretch.locationAdded('grant-a');
    stretch.liveTurnEnded(10, { locations: 10, liveShare: 0.5 });
    expect(stretch.intervalMs).toBe(2_000);
  });

  it('stretches by the moving average of live turns when the workers are the bound', () => {
    const { stretch } = setUp(null);
    stretch.liveTurnEnded(800, { locations: 10, liveShare: 1 });
    // 10 locations x 800 ms on 4 workers.
    expect(stretch.intervalMs).toBe(2_000);
  });
});
