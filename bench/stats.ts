/**
 * Repetitions and their summary: every figure in the report is the median of at least REPETITIONS runs,
 * with the min and max beside it, so a reader can see how noisy the machine was.
 */
import type { BenchFigure, BenchGoal } from './types.js';

/** A bench knob from the environment, or its default. */
export function envInt(name: string, fallback: number): number {
  const v = process.env[name];
  return v === undefined || v === '' ? fallback : Number.parseInt(v, 10);
}

/** A bench knob listing positive numbers (`5,20,60`), or its default when unset or empty. */
export function envList(name: string, fallback: number[]): number[] {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  return raw
    .split(',')
    .map((v) => Number(v.trim()))
    .filter((v) => Number.isFinite(v) && v > 0);
}

/** Runs per measured figure (BENCH_REPETITIONS, at least 3). */
export const REPETITIONS = Math.max(3, Number.parseInt(process.env['BENCH_REPETITIONS'] ?? '3', 10) || 3);

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

/** The `p` quantile (0-1) of ascending `sorted` values, nearest rank; NaN when there are none. */
export function percentile(sorted: readonly number[], p: number): number {
  return sorted.length === 0
    ? Number.NaN
    : (sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? Number.NaN);
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

/** A goal met when the median of the figure labelled `figure` is at least `target`. */
export function atLeast(goal: string, figure: string, target: number): BenchGoal {
  return { goal, figure, atLeast: target };
}

/** A goal met when the median of the figure labelled `figure` is at most `target`. */
export function atMost(goal: string, figure: string, target: number): BenchGoal {
  return { goal, figure, atMost: target };
}

/** A goal judged against the figures of its module's result. */
export interface GoalOutcome {
  goal: BenchGoal;
  module: string;
  /** The figure, or undefined when the module returned none of that label. */
  figure: BenchFigure | undefined;
  met: boolean;
}

/** Judges a goal by its figure's median (a missing figure, or NaN, is not met). */
export function judge(goal: BenchGoal, module: string, figures: readonly BenchFigure[]): GoalOutcome {
  const figure = figures.find((f) => f.label === goal.figure);
  const value = figure?.value ?? Number.NaN;
  const met =
    !Number.isNaN(value) &&
    (goal.atLeast === undefined || value >= goal.atLeast) &&
    (goal.atMost === undefined || value <= goal.atMost);
  return { goal, module, figure, met };
}
