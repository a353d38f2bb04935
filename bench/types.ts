/**
 * What a benchmark module provides to bench/run.ts. A module measures one thing, bounded in requests and
 * time, and returns named figures; run.ts collects them into bench/reports/<date>.md and .json.
 */
export interface BenchFigure {
  /** What was measured, e.g. "listing pages of 100, 1 location each". */
  label: string;
  value: number;
  /** e.g. "req/s", "ms", "MB". */
  unit: string;
  /** Over the repetitions, when `value` is their median (bench/stats.ts). */
  min?: number;
  max?: number;
}

/**
 * A goal of the issue that one of the module's figures is judged against (bench/stats.ts builds them:
 * atLeast, atMost). run.ts puts every module's goals in one table at the top of the report: the figure's
 * median, min-max, and met or not (by the median). A goal naming a figure the module did not return is
 * reported as not met, so a renamed label shows instead of passing silently.
 */
export interface BenchGoal {
  /** The goal in the words, e.g. "backfill / lower limit, enrichment off". */
  goal: string;
  /** The label of the module's figure that measures it. */
  figure: string;
  /** Met when the figure's median is at least `atLeast` / at most `atMost`. */
  atLeast?: number;
  atMost?: number;
}

export interface BenchResult {
  name: string;
  figures: BenchFigure[];
  /** Set-up facts a reader needs to judge the figures (data size, concurrency, machine). */
  notes: string[];
  /** The goals this module's figures measure, if any. */
  goals?: BenchGoal[];
}

export interface BenchModule {
  /** Short name, used to pick modules on the command line: `npm run bench -- sandbox`. */
  name: string;
  run(): Promise<BenchResult>;
  /** Run in a child process of its own (run.ts), for figures of process memory: RSS grown by earlier modules never shrinks. */
  isolated?: boolean;
  /** Extra Node flags of that process (an isolated module only): e.g. the image's heap bound. */
  execArgv?: string[];
}
