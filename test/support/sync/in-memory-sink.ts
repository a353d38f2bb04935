/**
 * An in-memory RecordSink + OffsetStore honouring the same contract as the Kafka one: a page's calls,
 * dead letters and offset become visible together or not at all. Failures can be scripted, including
 * the ambiguous kind (the commit went through but the caller is told it failed, like a lost EndTxn reply).
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
  /** Called before each commit is applied; tests use it to pause or observe. */
  beforeCommit: ((commit: PageCommit) => Promise<void> | void) | null = null;

  constructor(initial: ReadonlyMap<string, LocationOffset> = new Map()) {
    for (const [uid, offset] of initial) this.offsets.set(uid, structuredClone(offset));
  }

  /** The next `count` commits fail with a retriable error (after applying, when `ambiguous`). */
  failNext(count: number, options: { ambiguous?: boolean; error?: ConnectorError } = {}): void {
    for (let i = 0; i < count; i++) {
      this.failures.push({
        error: options.error ?? new RetriableError('KAFKA_SEND_FAILED', 'scripted sink failure'),
        ambiguous: options.ambiguous ?? false,
      });
    }
  }

  async commitPage(commit: PageCommit): Promise<void> {
    await this.beforeCommit?.(commit);
    const failure = this.failures.shift();
    if (failure !== undefined && !failure.ambiguous) throw failure.error;
    // All or nothing: nothing above can throw once we start applying.
    this.calls.push(...structuredClone([...commit.calls]));
    this.deadLetters.push(...structuredClone([...commit.deadLetters]));
    this.tombstones.push(...(commit.tombstones ?? []));
    this.offsets.set(commit.locationUid, structuredClone(commit.offset));
    this.commits += 1;
    if (failure !== undefined) throw failure.error;
  }

  generation(): number {
    return this.producerGeneration;
  }

  async loadAll(): Promise<Map<string, LocationOffset>> {
    return new Map([...this.offsets].map(([uid, offset]) => [uid, structuredClone(offset)]));
  }

  async close(): Promise<void> {}

  callsOf(locationUid: string): Call[] {
    return this.calls.filter((c) => c.locationUid === locationUid);
  }
}
