import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load.js';
import { MINIMAL_CONFIG } from '../../support/minimal-config.js';

const withRateLimit = (rateLimit: Record<string, unknown>) => ({
  ...MINIMAL_CONFIG,
  api: { ...(MINIMAL_CONFIG.api as Record<string, unknown>), rateLimit },
});

describe('the api.rateLimit shares', () => {
  it('give history and nudged polls a quarter each by default', () => {
    expect(parseConfig(MINIMAL_CONFIG, {}).api.rateLimit).toMatchObject({
      backfillShare: 0.25,
      nudgeShare: 0.25,
    });
  });

  it('refuse a backfillShare and a nudgeShare that sum to more than 1', () => {
    expect(() => parseConfig(withRateLimit({ backfillShare: 0.6, nudgeShare: 0.5 }), {})).toThrow(
      /nudgeShare.*sum to at most 1/s,
    );
    expect(
      parseConfig(withRateLimit({ backfillShare: 0.5, nudgeShare: 0.5 }), {}).api.rateLimit.nudgeShare,
    ).toBe(0.5);
  });
});
