import { describe, expect, it } from 'vitest';
import { delaysWithMissing, pollingIntervalMs, requestsPerChange } from '../../../bench/webhooks.js';

describe('webhooks bench helpers', () => {
  it('gives the polling arm the shortest whole-second interval at which idle listings and single calls fit the budget', () => {
    expect(pollingIntervalMs(1_000, 20, 1)).toBe(53_000); // 1000 / 19 = 52.6 s
    expect(pollingIntervalMs(10_000, 20, 1)).toBe(527_000);
    expect(pollingIntervalMs(95, 20, 1)).toBe(5_000);
  });

  it('refuses a budget that the changes alone use up', () => {
    expect(() => pollingIntervalMs(100, 1, 1)).toThrow(RangeError);
  });

  it("takes the reconciliation polls' requests out before dividing by the changes published", () => {
    // 40 s at 1.11 req/s of reconciliation = 44.4 requests; 124.4 requests in all for 40 changes.
    expect(requestsPerChange(124.4, 40, 40, 1.11)).toBeCloseTo(2, 5);
    expect(requestsPerChange(10, 40, 40, 1)).toBe(0);
    expect(requestsPerChange(10, 0, 40, 1)).toBeNaN();
  });

  it('counts a change never received with the delay it had at the end, so a missed change cannot lower the tail', () => {
    const delays = delaysWithMissing(
      [
        { updatedAtMs: 1_000, receivedAtMs: 1_500 },
        { updatedAtMs: 2_000, receivedAtMs: undefined },
        { updatedAtMs: 3_000, receivedAtMs: 3_200 },
      ],
      10_000,
    );
    expect(delays).toEqual([0.2, 0.5, 8]);
  });
});
