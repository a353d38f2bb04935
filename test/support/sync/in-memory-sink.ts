/**
 * An in-memory RecordSink + OffsetStore honouring the same contract as the Kafka one: a page's calls,
 * dead letters and offset become visible together or not at all, and every outcome is the one rule's
 * (src/sync/location/commit-outcome.ts) reading of the facts, as in the Kafka sinks. Failures can be scripted,
 * including the ambiguous kind (the commit went through but its reply was lost, like a failed EndTxn: the
 * sink then reads the store back, as the transactional sink does after rebuilding its producer), stale
 * reads (an offset older than the one stored, like a read of the offsets topic that stops at a last stable
 * offset held back by pending transaction markers) and failed reads. Like the Kafka sink, it does not write
 * a page prepared under an older generation (PageCommit.generation): it reads the location's offset instead.
 */
import { ConnectorError, RetriableError } from '../../../src/errors/index.js';
import {
  commitOutcomes,
  type StoreRead,
  type WriteFacts,
} from '../../../src/sync/location/commit-outcome.js';
import type { Call, DeadLetter, LocationOffset } from '../../../src/sync/model.js';
import type { CommitOutcome, OffsetStore, PageCommit, RecordSink } from '../../../src/sync/ports.js';

interface ScriptedFailure {
  error: ConnectorError;
  /** Apply the commit before failing. */
  ambiguous: boolean;
  /** The sink writes nothing more (closing, taken over): the promise rejects with `error`. */
  ended: boolean;
}

/** Reads of the store a single failed commit may take before the test is taken for a livelock. */
const MAX_READS = 1000;

export class InMemorySink implements RecordSink, OffsetStore {
  readonly calls: Call[] = [];
  readonly deadLetters: DeadLetter[] = [];
  readonly tombstones: string[] = [];
  readonly offsets = new Map<string, LocationOffset>();
  /** The signals the stored pages completed (PageCommit.signalDone), in order. */
  readonly signalsDone: string[] = [];
  /** The calls stored pages published for a backfill signal (PageSource.signal): uid and signal. */
  readonly reReads: Array<{ uid: string; signal: string }> = [];
  commits = 0;
  /** Reads of the store made to settle failed commits (not counting loadAll). */
  readBacks = 0;
  /** RecordSink.generation: tests bump it to model a producer (re)initialisation. */
  producerGeneration = 0;
  private readonly failures: ScriptedFailure[] = [];
  /** Every offset stored per location, oldest first (for stale reads). */
  private readonly history = new Map<string, LocationOffset[]>();
  private staleReads = 0;
  private staleDepth = 1;
  private failedReads = 0;
  /** Called before each commit is applied; tests use it to pause or observe. */
  beforeCommit: ((commit: PageCommit) => Promise<void> | void) | null = null;

  constructor(initial: ReadonlyMap<string, LocationOffset> = new Map()) {
    for (const [uid, offset] of initial) this.offsets.set(uid, structuredClone(offset));
  }

  /**
   * The next `count` commits fail: with a retriable error by default (nothing written), after applying
   * when `ambiguous` (outcome unknown, read back), or with `error` (a FatalError, or any error when
   * `ended`, rejects the promise: the sink writes nothing more).
   */
  failNext(
    count: number,
    options: { ambiguous?: boolean; error?: ConnectorError; ended?: boolean } = {},
  ): void {
    for (let i = 0; i < count; i++) {
      this.failures.push({
        error:
          options.error ??
          (options.ambiguous === true
            ? new RetriableError('KAFKA_COMMIT_OUTCOME_UNKNOWN', 'scripted sink failure, outcome unknown')
            : new RetriableError('KAFKA_SEND_FAILED', 'scripted sink failure')),
        ambiguous: options.ambiguous ?? false,
        ended: options.ended ?? false,
      });
    }
  }

  /**
   * The next `count` reads (loadAll, or a read-back settling a commit) answer each location's offset as it
   * was `depth` commits ago (a read behind the markers).
   */
  readStaleNext(count: number, depth = 1): void {
    this.staleReads += count;
    this.staleDepth = depth;
  }

  /** The next `count` read-backs settling a commit fail (Kafka unreachable); the sink reads again. */
  failReadsNext(count: number): void {
    this.failedReads += count;
  }

  async commitPage(commit: PageCommit): Promise<CommitOutcome> {
    await this.beforeCommit?.(commit);
    const at = [{ committed: commit.committed ?? null, offset: commit.offset }];
    if (commit.generation !== undefined && commit.generation !== this.producerGeneration) {
      const reason = new RetriableError(
        'KAFKA_PAGE_FROM_OLD_PRODUCER',
        'page from an older producer generation',
      );
      return this.settle(commit.locationUid, at, { write: 'aborted', reason }, true);
    }
    const failure = this.failures.shift();
    if (failure !== undefined && !failure.ambiguous) {
      if (failure.ended || !(failure.error instanceof RetriableError)) throw failure.error;
      return this.settle(commit.locationUid, at, { write: 'aborted', reason: failure.error }, false);
    }
    // All or nothing: nothing above can throw once we start applying.
    this.calls.push(...structuredClone([...commit.calls]));
    this.deadLetters.push(...structuredClone([...commit.deadLetters]));
    this.tombstones.push(...(commit.tombstones ?? []));
    if (commit.signalDone !== undefined) this.signalsDone.push(commit.signalDone);
    const reRead = commit.source?.signal;
    if (reRead !== undefined) this.reReads.push(...commit.calls.map((c) => ({ uid: c.uid, signal: reRead })));
    this.offsets.set(commit.locationUid, structuredClone(commit.offset));
    const history = this.history.get(commit.locationUid) ?? [];
    history.push(structuredClone(commit.offset));
    this.history.set(commit.locationUid, history);
    this.commits += 1;
    if (failure === undefined) return { kind: 'stored', generation: this.producerGeneration };
    if (!(failure.error instanceof RetriableError)) throw failure.error;
    return this.settle(commit.locationUid, at, { write: 'unknown', reason: failure.error }, false);
  }

  /** As the transactional sink: the rule first, then reads of the location's offset until it decides. */
  private settle(
    locationUid: string,
    at: Parameters<typeof commitOutcomes>[0],
    facts: WriteFacts & { write: 'aborted' | 'unknown' },
    readFirst: boolean,
  ): CommitOutcome {
    let verdict = readFirst ? 'read-again' : commitOutcomes(at, facts)[0];
    for (let reads = 0; verdict === 'read-again' || verdict === undefined; reads++) {
      if (reads === MAX_READS) throw new Error('the read-back never decided the outcome');
      if (this.failedReads > 0) {
        this.failedReads -= 1;
        continue;
      }
      this.readBacks += 1;
      const read: StoreRead = {
        stored: [this.read().get(locationUid) ?? null],
        afterInit: true,
        generation: this.producerGeneration,
      };
      verdict = commitOutcomes(at, { ...facts, read })[0];
    }
    // Only a visible record outvotes the store ('published'), and this sink never reports one.
    if (verdict === 'rewrite-offset' || verdict === 'republish-lost')
      throw new Error('the rule asked to write part of a page again without a witness');
    return verdict;
  }

  generation(): number {
    return this.producerGeneration;
  }

  async loadAll(): Promise<Map<string, LocationOffset>> {
    return this.read();
  }

  private read(): Map<string, LocationOffset> {
    const stale = this.staleReads > 0;
    if (stale) this.staleReads -= 1;
    return new Map(
      [...this.offsets].map(([uid, offset]) => {
        const history = this.history.get(uid) ?? [];
        const previous = stale ? history[history.length - 1 - this.staleDepth] : undefined;
        return [uid, structuredClone(previous ?? offset)];
      }),
    );
  }

  async close(): Promise<void> {}

  callsOf(locationUid: string): Call[] {
    return this.calls.filter((c) => c.locationUid === locationUid);
  }
}
