/**
 * An in-memory RecordSink + OffsetStore honouring the same contract as the Kafka one: a page's calls,
 * dead letters and offset become visible together or not at all. Failures can be scripted, including
 * the ambiguous kind (the commit went through but the caller is told its outcome is unknown, like a lost
 * EndTxn reply), and stale reads (loadAll answering an offset older than the one stored, like a read of the
 * offsets topic that stops at a last stable offset held back by pending transaction markers). Like the Kafka
 * sink, it refuses a page prepared under an older generation (PageCommit.generation).
 */
import { ConnectorError, RetriableError } from '../../../src/errors/index.js';
import type { Call, DeadLetter, LocationOffset } from '../../../src/sync/model.js';
import type { OffsetStore, PageCommit, RecordSink } from '../../../src/sync/ports.js';

interface ScriptedFailure {
  error: ConnectorError;
  /** Apply the commit before throwing. */
  ambiguous: boolean;
}

export class InMemorySink implements RecordSink, OffsetStore {
  readonly calls: Call[] = [];
  readonly deadLetters: DeadLetter[] = [];
  readonly tombstones: string[] = [];
  readonly offsets = new Map<string, LocationOffset>();
  commits = 0;
  /** RecordSink.generation: tests bump it to model a producer (re)initialisation. */
  producerGeneration = 0;
  private readonly failures: ScriptedFailure[] = [];
  /** Every offset stored per location, oldest first (for stale reads). */
  private readonly history = new Map<string, LocationOffset[]>();
  private staleReads = 0;
  private staleDepth = 1;
  /** Called before each commit is applied; tests use it to pause or observe. */
  beforeCommit: ((commit: PageCommit) => Promise<void> | void) | null = null;

  constructor(initial: ReadonlyMap<string, LocationOffset> = new Map()) {
    for (const [uid, offset] of initial) this.offsets.set(uid, structuredClone(offset));
  }

  /** The next `count` commits fail with a retriable error (after applying, when `ambiguous`). */
  failNext(count: number, options: { ambiguous?: boolean; error?: ConnectorError } = {}): void {
    for (let i = 0; i < count; i++) {
      this.failures.push({
        error:
          options.error ??
          (options.ambiguous === true
            ? new RetriableError('KAFKA_COMMIT_OUTCOME_UNKNOWN', 'scripted sink failure, outcome unknown', {
                details: { outcomeUnknown: true },
              })
            : new RetriableError('KAFKA_SEND_FAILED', 'scripted sink failure')),
        ambiguous: options.ambiguous ?? false,
      });
    }
  }

  /**
   * The next `count` loadAll() calls answer each location's offset as it was `depth` commits ago (a read
   * behind the markers).
   */
  readStaleNext(count: number, depth = 1): void {
    this.staleReads += count;
    this.staleDepth = depth;
  }

  async commitPage(commit: PageCommit): Promise<void> {
    await this.beforeCommit?.(commit);
    if (commit.generation !== undefined && commit.generation !== this.producerGeneration)
      throw new RetriableError('KAFKA_PAGE_FROM_OLD_PRODUCER', 'page from an older producer generation');
    const failure = this.failures.shift();
    if (failure !== undefined && !failure.ambiguous) throw failure.error;
    // All or nothing: nothing above can throw once we start applying.
    this.calls.push(...structuredClone([...commit.calls]));
    this.deadLetters.push(...structuredClone([...commit.deadLetters]));
    this.tombstones.push(...(commit.tombstones ?? []));
    this.offsets.set(commit.locationUid, structuredClone(commit.offset));
    const history = this.history.get(commit.locationUid) ?? [];
    history.push(structuredClone(commit.offset));
    this.history.set(commit.locationUid, history);
    this.commits += 1;
    if (failure !== undefined) throw failure.error;
  }

  generation(): number {
    return this.producerGeneration;
  }

  async loadAll(): Promise<Map<string, LocationOffset>> {
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
