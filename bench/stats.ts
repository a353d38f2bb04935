/**
 * Repetitions and their summary: every figure in the report is the median of at least REPETITIONS runs,
 * with the min and max beside it, so a reader can see how noisy the machine was.
 */
import type { BenchFigure } from './types.js';

/** A bench knob from the environment, or its default. */
export function envInt(name: string, fallback: number): number {
  const v = process.env[name];
  return v === undefined || v === '' ? fallback : Number.parseInt(v, 10);
}

/** Runs per measured figure (BENCH_REPETITIONS, at least 3). */
export const REPETITIONS = Math.max(3, Number.parseInt(process.env['BENCH_REPETITIONS'] ?? '3', 10) || 3);

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

/** The median figure of `values` with their min and max. */
export function summarise(label: string, unit: string, values: readonly number[]): BenchFigure {
  return { label, unit, value: median(values), min: Math.min(...values), max: Math.max(...values) };
}

/** Collects named samples over repetitions, then summarises each (in the order first seen). */
export class Samples {
  private readonly series = new Map<string, { unit: string; values: number[] }>();

  add(label: string, unit: string, value: number): void {
    const entry = this.series.get(label) ?? { unit, values: [] };
    entry.values.push(value);
    this.series.set(label, entry);
  }

  values(label: string): number[] {
    return this.series.get(label)?.values ?? [];
  }

  figures(): BenchFigure[] {
    return [...this.series].map(([label, { unit, values }]) => summarise(label, unit, values));
  }
}

/** Per repetition ratios a[i]/b[i], so the ratio's spread comes from one run's side-by-side figures. */
export function ratios(a: readonly number[], b: readonly number[]): number[] {
  return a.map((x, i) => x / (b[i] ?? Number.NaN));
}
