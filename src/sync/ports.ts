/**
 * The small interfaces the sync engine depends on. `main` wires real implementations (Kafka, OAuth);
 * tests may wire others. None of the implementations calls another: the per-location orchestrator
 * sequences them.
 */
import type { Call, DeadLetter, LocationOffset } from './model.js';

/** Everything one page produced, committed atomically (exactly-once) or records-then-offset (at-least-once). */
export interface PageCommit {
  locationUid: string;
  calls: readonly Call[];
  deadLetters: readonly DeadLetter[];
  /** The location's offset after this page; stored last (or in the same transaction). */
  offset: LocationOffset;
  /**
   * The offset this page was computed from, when known. A page whose `offset` equals it cannot be
   * recognised in the offsets topic, so a sink never takes a commit of unknown outcome for done on that
   * evidence alone.
   */
  startOffset?: LocationOffset;
  /** uids of calls the API reports gone, published as tombstones (kafka.tombstoneGoneCalls). */
  tombstones?: readonly string[];
  /** Where the page came from, for the records' source-metadata headers. */
  source?: PageSource;
}

/** The position a page was listed at: its traversal, the page number in it, and the request's since/cursor. */
export interface PageSource {
  traversalId: string;
  page: number;
  since: string | null;
  cursor: string | null;
}

/**
 * Where pages go. Contract: when `commitPage` resolves, the calls, dead letters and offset are durable
 * in Kafka; when it rejects, none of them is visible to read_committed consumers (exactly-once mode) or
 * the offset was not written (at-least-once mode). Rejections are ConnectorErrors (retriable or fatal).
 */
export interface RecordSink {
  commitPage(commit: PageCommit): Promise<void>;
  /**
   * Optional: a number that grows each time the sink (re)initialises its producer. Whatever was stored
   * before may since have been superseded (a transaction settled by the initialisation, another writer),
   * so a location seeing it change reloads its stored offset before its next page.
   */
  generation?(): number;
  close(): Promise<void>;
}

/** Reads stored offsets. Writes go through RecordSink, so that they can share the page's transaction. */
export interface OffsetStore {
  /** Reads the offsets topic to its end; returns the latest offset per location uid (tombstones removed). */
  loadAll(): Promise<Map<string, LocationOffset>>;
}
