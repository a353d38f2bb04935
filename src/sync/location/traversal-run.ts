/**
 * One traversal of one lane of a location, as it runs: its id (in its log lines and the records' source
 * headers), its logger, its cursor-loop detector, its counts (location-counters.ts) and the rule that gives
 * up after too many cursor rejections without progress. State and rules only: the orchestrator
 * (location-sync.ts) lists and commits, location-log.ts words its lines.
 */
import { randomUUID } from 'node:crypto';
import { FatalError, RetriableError } from '../../errors/index.js';
import type { Logger } from '../../logging/logger.js';
import { CursorLoopDetector } from './cursor-loop.js';
import type { Lane } from '../lanes/lanes.js';
import type { TraversalCounts } from './location-counters.js';
import type { InvalidCursorError } from '../ports.js';

/** Cursor rejections in a row that publish nothing before the traversal fails (retriable) instead of restarting. */
export const MAX_RESTARTS_WITHOUT_PROGRESS = 5;

export class TraversalRun implements TraversalCounts {
  readonly id = randomUUID().slice(0, 8);
  readonly detector = new CursorLoopDetector();
  pages = 0;
  published = 0;
  deadLettered = 0;
  deduplicated = 0;
  private restartsWithoutProgress = 0;
  private logger: Logger | undefined;

  constructor(
    readonly locationUid: string,
    readonly lane: Lane,
    readonly startedAt: number,
    private readonly parent: Logger,
  ) {}

  /**
   * This traversal's logger (location and traversal bound; the lane too for history), made on first use: an
   * idle poll logs nothing at info, and a child logger per traversal was a measurable share of its CPU (pino
   * serialises the bindings when the child is made).
   */
  get log(): Logger {
    return (this.logger ??= this.parent.child({
      location: this.locationUid,
      traversal: this.id,
      ...(this.lane === 'history' && { lane: this.lane }),
    }));
  }

  /** Whether this traversal was an idle poll: one page, nothing published or dead-lettered. */
  get idle(): boolean {
    return this.pages === 1 && this.published === 0 && this.deadLettered === 0;
  }

  /** A page published (or dead-lettered) something: cursor rejections count from zero again. */
  progressed(): void {
    this.restartsWithoutProgress = 0;
  }

  /**
   * The listing rejected this traversal's cursor: a restart from the watermark is counted, and null returned
   * (restart); once more than MAX_RESTARTS_WITHOUT_PROGRESS in a row made no progress, the error that fails
   * the traversal instead (CURSOR_RESTARTS_EXHAUSTED, retriable).
   */
  cursorRejected(error: InvalidCursorError): RetriableError | null {
    this.restartsWithoutProgress += 1;
    if (this.restartsWithoutProgress > MAX_RESTARTS_WITHOUT_PROGRESS)
      return new RetriableError(
        'CURSOR_RESTARTS_EXHAUSTED',
        `the calls API rejected ${this.restartsWithoutProgress} cursors in a row without progress (location ${this.locationUid}); trying again later`,
        { cause: error },
      );
    this.detector.reset();
    return null;
  }

  /** The error that stops the location when the API hands back a cursor this traversal followed already. */
  cursorLoop(): FatalError {
    return new FatalError(
      'CURSOR_LOOP',
      `the calls API returned a cursor already followed in this traversal (location ${this.locationUid}); stopping this location`,
      { details: { locationUid: this.locationUid, traversal: this.id } },
    );
  }
}
