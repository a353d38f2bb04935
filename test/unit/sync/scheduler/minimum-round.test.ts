import { describe, expect, it } from 'vitest';
import { minimumRoundMs } from '../../../../src/sync/scheduler/minimum-round.js';

describe('minimumRoundMs', () => {
  it('is one listing request per location at the configured request rate', () => {
    expect(minimumRoundMs(10_000, 20)).toBe(500_000);
    expect(minimumRoundMs(1_000, 20)).toBe(50_000);
  });
});
