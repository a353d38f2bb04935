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

export interface BenchResult {
  name: string;
  figures: BenchFigure[];
  /** Set-up facts a reader needs to judge the figures (data size, concurrency, machine). */
  notes: string[];
}

export interface BenchModule {
  /** Short name, used to pick modules on the command line: `npm run bench -- sandbox`. */
  name: string;
  run(): Promise<BenchResult>;
  /** Run in a child process of its own (run.ts), for figures of process memory: RSS grown by earlier modules never shrinks. */
  isolated?: boolean;
}
