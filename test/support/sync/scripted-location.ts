/**
 * A scripted ScheduledLocation (src/sync/scheduler/scheduled-location.ts) for the scheduler's tests: each page the
 * scheduler runs takes the next step of its script (complete, more to come, a failure, a page held until the
 * test lets it go), or `otherwise` once the script is spent (a completed traversal). It records every page
 * (lane, time on the clock, signal; in a `journal` shared by several, when set) and every request to read a history page ahead; the test sets
 * `hasHistory` and `ahead` to play a split location. Like LocationSync, it refuses a second page while one
 * runs: the scheduler guarantees one page at a time per location.
 */
import type { Lane } from '../../../src/sync/lanes/lanes.js';
import { emptyTotals } from '../../../src/sync/location/location-counters.js';
import { EMPTY_OFFSET } from '../../../src/sync/model.js';
import type { AheadState } from '../../../src/sync/location/read-ahead.js';
import type { PageProgress, ScheduledLocation } from '../../../src/sync/scheduler/scheduled-location.js';
import type { Clock } from '../../../src/time/clock.js';

/** One page the scheduler ran. */
export interface PageRun {
  lane: Lane;
  /** The clock's time when it started. */
  at: number;
  signal: AbortSignal | undefined;
}

/** What one page does: its report, or a rejection. */
export type PageStep = (run: PageRun) => PageProgress | Promise<PageProgress>;

/** Steps for scripts. */
export const page = {
  /** The lane's traversal completes (for history: the lanes merge), publishing `published` calls. */
  complete:
    (published = 1): PageStep =>
    () => ({ complete: true, published }),
  /** Calls published, more pages to come. */
  more:
    (published = 1): PageStep =>
    () => ({ complete: false, published }),
  /** The cursor was rejected and the traversal restarted: nothing published, no progress. */
  restarted: (): PageStep => () => ({ complete: false, published: 0 }),
  fails:
    (error: Error): PageStep =>
    () =>
      Promise.reject(error),
  /** Waits for `gate` (or rejects with the signal's reason when it aborts first), then does `then`. */
  heldUntil:
    (gate: Promise<void>, then: PageStep = page.complete()): PageStep =>
    async (run) => {
      await new Promise<void>((resolve, reject) => {
        void gate.then(resolve);
        run.signal?.addEventListener('abort', () => reject(run.signal?.reason as Error), { once: true });
      });
      return then(run);
    },
  /** Never settles, whatever its signal does (a commit stuck on Kafka). */
  stuck: (): PageStep => () => new Promise<PageProgress>(() => undefined),
};

export class ScriptedLocation implements ScheduledLocation {
  readonly offset = EMPTY_OFFSET;
  traversalId: string | null = null;
  readonly totals = emptyTotals();
  readonly backfill = null;
  hasHistory = false;
  /** What historyAhead() answers. */
  ahead: AheadState = { state: 'none' };
  /** Every page run, in order. */
  readonly runs: PageRun[] = [];
  /** The signal of every prefetchHistory call, in order. */
  readonly prefetches: Array<AbortSignal | undefined> = [];
  /** Where several locations record their pages in one order (`uid-suffix:lane`), when a test sets it. */
  journal: string[] | undefined;
  /** Called by prefetchHistory (after recording it): a test's way to start a history page "read". */
  onPrefetch: (signal: AbortSignal | undefined) => void = () => undefined;
  /** The step once the script is spent. */
  otherwise: PageStep = page.complete();
  private readonly script: PageStep[] = [];
  private running = false;

  constructor(
    readonly locationUid: string,
    private readonly clock: Clock,
    ...steps: PageStep[]
  ) {
    this.script.push(...steps);
  }

  /** Appends steps to the script. */
  then(...steps: PageStep[]): this {
    this.script.push(...steps);
    return this;
  }

  /** The pages run of `lane`. */
  runsOf(lane: Lane): PageRun[] {
    return this.runs.filter((r) => r.lane === lane);
  }

  async runPage(signal?: AbortSignal, lane: Lane = 'live'): Promise<PageProgress> {
    if (this.running) throw new Error(`runPage re-entered for location ${this.locationUid}`);
    this.running = true;
    const run: PageRun = { lane, at: this.clock.now(), signal };
    this.runs.push(run);
    this.journal?.push(`${this.locationUid.slice(-1)}:${lane}`);
    try {
      const report = await (this.script.shift() ?? this.otherwise)(run);
      this.totals.pages += 1;
      this.totals.published += report.published;
      if (report.complete && lane === 'live') this.totals.traversalsCompleted += 1;
      return report;
    } finally {
      this.running = false;
    }
  }

  historyAhead(): AheadState {
    return this.ahead;
  }

  prefetchHistory(signal?: AbortSignal): void {
    this.prefetches.push(signal);
    this.onPrefetch(signal);
  }
}
