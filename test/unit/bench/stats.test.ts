import { describe, expect, it } from 'vitest';
import { atLeast, atMost, judge, percentile } from '../../../bench/stats.js';
import type { BenchFigure } from '../../../bench/types.js';

const figures: BenchFigure[] = [
  { label: 'ratio: connector / lower limit', value: 0.82, min: 0.69, max: 0.9, unit: 'ratio' },
  { label: 'CPU per idle poll', value: 0.41, unit: 'ms' },
  { label: 'p99 / (interval + 1 s)', value: Number.NaN, unit: 'ratio' },
];

describe('bench goals', () => {
  it('meets an at-least goal by the median of its figure, whatever the minimum', () => {
    const outcome = judge(atLeast('≥ 0.8', 'ratio: connector / lower limit', 0.8), 'limits', figures);
    expect(outcome.met).toBe(true);
    expect(outcome.figure?.min).toBe(0.69);
  });

  it('misses an at-most goal whose median is above the target', () => {
    expect(judge(atMost('< 0.3 ms', 'CPU per idle poll', 0.3), 'idle', figures).met).toBe(false);
    expect(judge(atMost('< 0.5 ms', 'CPU per idle poll', 0.5), 'idle', figures).met).toBe(true);
  });

  it('reports a goal whose figure the module did not return, or could not measure, as not met', () => {
    const missing = judge(atMost('renamed', 'CPU per poll', 0.3), 'idle', figures);
    expect(missing.figure).toBeUndefined();
    expect(missing.met).toBe(false);
    expect(judge(atMost('≤ 1', 'p99 / (interval + 1 s)', 1), 'freshness', figures).met).toBe(false);
  });
});

describe('percentile', () => {
  it('takes the nearest rank of sorted values, the last one for the top quantiles', () => {
    const sorted = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
    expect(percentile(sorted, 0.5)).toBe(6);
    expect(percentile(sorted, 0.99)).toBe(10);
    expect(percentile(sorted, 1)).toBe(10);
  });

  it('is NaN without values, so an empty window never reads as a zero delay', () => {
    expect(percentile([], 0.5)).toBeNaN();
  });
});
