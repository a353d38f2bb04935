import { describe, expect, it } from 'vitest';
import { FencingBudget } from '../../../../src/kafka/sinks/init-rule.js';

describe('FencingBudget', () => {
  it('allows `limit` fencings within the window and refuses the next', () => {
    const budget = new FencingBudget({ limit: 2, windowMs: 1000 });
    expect(budget.allowRebuild(0)).toBe(true);
    expect(budget.allowRebuild(10)).toBe(true);
    expect(budget.allowRebuild(20)).toBe(false);
  });

  it('forgets fencings older than the window', () => {
    const budget = new FencingBudget({ limit: 1, windowMs: 1000 });
    expect(budget.allowRebuild(0)).toBe(true);
    expect(budget.allowRebuild(1000)).toBe(true);
    // Only the fencing at 1000 is in the window: a second one within it is over the limit.
    expect(budget.allowRebuild(1500)).toBe(false);
  });

  it('with a limit of 0 makes the first fencing fatal', () => {
    expect(new FencingBudget({ limit: 0, windowMs: 1000 }).allowRebuild(0)).toBe(false);
  });

  it('rejects invalid options at construction', () => {
    expect(() => new FencingBudget({ limit: -1, windowMs: 1000 })).toThrow(RangeError);
    expect(() => new FencingBudget({ limit: 1, windowMs: 0 })).toThrow(RangeError);
  });
});
