/**
 * The commit driver of one location: hands a page to the sink and acts on the typed outcome that the one
 * rule decided (commit-outcome.ts, RecordSink.commitPage). It reads no offsets and decides nothing about
 * what is stored:
 * - 'stored' and 'superseded' are returned to the location (which moves on, or adopts the stored offset);
 * - 'rejected' (nothing visible) commits the same page again after a backoff on the injected clock, while
 *   the commit retry policy allows; then the rejection's reason (a RetriableError) is thrown, and the
 *   scheduler retries the location later from its committed offset;
 * - a rejection of the promise (the sink writes nothing more: fatal, closing, taken over) propagates.
 *
 * It also keeps the sink generation (RecordSink.generation) the location's offsets were read under: each
 * page carries it (PageCommit.generation), and an outcome read under a newer one hands it over, so the
 * page committed again after a 'rejected' carries the generation its read-back was made under.
 */
import type { Logger } from '../../logging/logger.js';
import { backoffDelayMs, mayRetry, type BackoffPolicy } from '../../time/backoff.js';
import type { Clock } from '../../time/clock.js';
import type { LocationOffset } from '../model.js';
import type { PageCommit, RecordSink } from '../ports.js';

/** Where a committed page leaves its location. */
export type CommitResult = { kind: 'stored' } | { kind: 'superseded'; stored: LocationOffset };

export interface CommitDriverOptions {
  sink: RecordSink;
  /** Backoff and attempts for rejected pages (LocationSyncSettings.commitRetry). */
  retry: Readonly<BackoffPolicy>;
  clock: Clock;
}

export class CommitDriver {
  private generation: number | undefined;

  constructor(private readonly options: CommitDriverOptions) {
    this.generation = options.sink.generation?.();
  }

  /**
   * Commits `commit` (stamped with the generation), retrying rejected attempts (see the module comment).
   * `log`: where a retry is reported (made on first use). An abort of `signal` ends a backoff; a commit in flight is awaited.
   */
  async commit(commit: PageCommit, log: () => Logger, signal?: AbortSignal): Promise<CommitResult> {
    const policy = this.options.retry;
    for (let attempt = 1; ; attempt++) {
      const outcome = await this.options.sink.commitPage({
        ...commit,
        ...(this.generation !== undefined && { generation: this.generation }),
      });
      if (outcome.generation !== undefined) this.generation = outcome.generation;
      if (outcome.kind === 'stored') return { kind: 'stored' };
      if (outcome.kind === 'superseded') return { kind: 'superseded', stored: outcome.stored };
      if (!mayRetry(policy, attempt)) throw outcome.reason;
      const wait = backoffDelayMs(policy, attempt, this.options.clock.random());
      log().warn({ code: outcome.reason.code, attempt, waitMs: wait }, 'page commit failed; retrying');
      signal?.throwIfAborted();
      await this.options.clock.sleep(wait, signal);
    }
  }
}
