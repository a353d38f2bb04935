/**
 * The orchestrator of ONE location: it sequences the listing (CallsApi, whose items arrive mapped), the
 * paginator rules (traversal.ts), the enricher, the privacy policy, the boundary dedupe and
 * RecordSink.commitPage, which stores the page's records and the location's offset atomically. None of those parts calls another; only this does.
 *
 * Unit of work: one page (`runPage`), so the scheduler can interleave locations fairly and bound memory
 * by pages in flight. `runTraversal` loops pages until nextCursor is null.
 *
 * Offsets: `committed` is what the sink last stored (the starting offset comes from the OffsetStore);
 * `position` is where the next page starts, equal to `committed` except right after an invalid cursor
 * (restart from the watermark, not yet committed: a crash then simply resumes from `committed`).
 * An idle page (nothing to publish, offset equal to `committed`, see `isIdle`) is not committed at all.
 *
 * Failure handling:
 * - InvalidCursorError (any 4xx but 401/403/429 to a request with a cursor, whatever its body, including
 *   the stored cursor of a crashed or old run): restart from since = watermark with the boundary kept,
 *   counted by reason. The restarted first page carries no cursor, so if it fails the same way the
 *   client's error is fatal. More than MAX_RESTARTS_WITHOUT_PROGRESS restarts that publish nothing fail
 *   the traversal (retriable).
 * - Enrichment never costs a record (enricher.ts): a call that cannot be enriched for a reason of its own
 *   is published unenriched and redacted, counted; a transient failure fails the page before the commit.
 * - A repeated cursor: FatalError CURSOR_LOOP (the scheduler stops this location only).
 * - The commit's outcome is the sink's (RecordSink.commitPage, decided by the one rule of commit-outcome.ts;
 *   this file reads no offsets): 'stored' moves the location on; 'rejected' (nothing visible) commits the
 *   same page again after a backoff, until the commit retry policy is spent (the reason then propagates and
 *   the scheduler retries the location from `committed`); 'superseded' adopts the offset the store holds
 *   (written by another instance since) and lists from there. A rejection of the promise means the sink
 *   writes nothing more (fatal, closing, taken over): it propagates.
 * - Pages carry the sink generation their committed offset was read under (PageCommit.generation); an
 *   outcome read under a newer one (after the sink re-initialised its producer) carries it, and the next
 *   pages carry it in turn.
 * - An abort of `signal` before the commit abandons the page (nothing committed); once commitPage has
 *   started it is awaited, the sink bounding its own time.
 *
 * Read-ahead: while a page that is not the traversal's last commits, the next page is listed and enriched
 * from the offset that page will store (one page ahead, never more), so a location's listing and
 * enrichment overlap its commit instead of following it. Only the work before the commit is done ahead:
 * the cursor-loop check, the metrics and the commit happen when the page's turn comes, in order. The page
 * read ahead is used only if the commit stored exactly that offset; otherwise (a failed or superseded
 * commit, a reload, an abort) it is dropped and its requests cancelled.
 * Every other error propagates to the scheduler, which decides (retry later or stop the location).
 */
import { randomUUID } from 'node:crypto';
import { FatalError, RetriableError, SkippableError } from '../errors/index.js';
import type { Logger } from '../logging/logger.js';
import { backoffDelayMs, mayRetry, type BackoffPolicy } from '../time/backoff.js';
import type { Clock } from '../time/clock.js';
import { parseInstant, toEpochMillis } from '../time/instant.js';
import { CursorLoopDetector } from './cursor-loop.js';
import type { EnrichedItem, Enricher, UnenrichedReason } from './enricher.js';
import type { BoundaryFingerprints } from './fingerprint.js';
import type { Call, DeadLetter, ListedCall, LocationOffset, MappedItem, PrivacyPolicy } from './model.js';
import {
  InvalidCursorError,
  type CallsApi,
  type CommitOutcome,
  type ListedPage,
  type PageCommit,
  type PageRequest,
  type RecordSink,
  type RequestHint,
  type SyncMetrics,
} from './ports.js';
import { requestHint } from './priority.js';
import { applyPrivacy, completeCall } from './privacy.js';
import {
  applyPage,
  nextPageRequest,
  restartAfterInvalidCursor,
  sameOffset,
  type TraversalSettings,
} from './traversal.js';

export const MAX_RESTARTS_WITHOUT_PROGRESS = 5;

export interface LocationSyncSettings {
  pageSize: number;
  /** `since` of a location's first traversal when it has no stored offset; null = from the beginning. */
  startSince: string | null;
  boundaryCap: number;
  /**
   * Bytes the boundary may take in the stored offset (traversal.ts, boundaryEntryBytes): the offsets
   * topic's max.message.bytes less the rest of the record. Unset: no byte bound (tests).
   */
  boundaryMaxBytes?: number;
  privacy: PrivacyPolicy;
  /** Keyed fingerprints of boundary records (fingerprint.ts: why keyed); one per connector, same on every instance. */
  fingerprints: BoundaryFingerprints;
  /** Backoff and attempts for retriable sink failures (the API retry policy's numbers serve well). */
  commitRetry: Readonly<BackoffPolicy>;
  /** A call GET reports gone: a tombstone instead of the unenriched record (kafka.tombstoneGoneCalls). */
  tombstoneGone?: boolean;
}

export interface LocationSyncOptions {
  locationUid: string;
  startOffset: LocationOffset;
  api: Pick<CallsApi, 'listPage'>;
  enricher: Enricher;
  sink: RecordSink;
  metrics: SyncMetrics;
  logger: Logger;
  settings: LocationSyncSettings;
  clock: Clock;
}

/** Counts since this LocationSync was created (the process started), for the status view. */
export interface LocationTotals {
  pages: number;
  published: number;
  deadLettered: number;
  deduplicated: number;
  redacted: number;
  belowWatermark: number;
  traversalsCompleted: number;
}

/** Totals of a location that has done nothing yet. */
export function emptyTotals(): LocationTotals {
  return {
    pages: 0,
    published: 0,
    deadLettered: 0,
    deduplicated: 0,
    redacted: 0,
    belowWatermark: 0,
    traversalsCompleted: 0,
  };
}

export interface PageReport {
  /** The traversal ended with this page (nextCursor null). */
  complete: boolean;
  /** The cursor was rejected and the traversal restarted from the watermark; nothing was committed. */
  restarted: boolean;
  published: number;
}

interface TraversalState {
  id: string;
  startedAt: number;
  detector: CursorLoopDetector;
  restartsWithoutProgress: number;
  pages: number;
  published: number;
  deadLettered: number;
  deduplicated: number;
  /** This traversal's logger (location and traversal bound), made on first use. */
  readonly log: Logger;
}

/** A listed page mapped, deduplicated against its starting offset and enriched: all it needs to commit. */
interface PreparedPage {
  unpositioned: DeadLetter[];
  outcome: ReturnType<typeof applyPage<PageEntry>>;
  enriched: EnrichedItem[];
}

/** The next page, listed and prepared while the current one commits (see the module comment). */
interface ReadAhead {
  /** The offset it starts from: the one the committing page stores. */
  from: LocationOffset;
  request: PageRequest;
  signal: AbortSignal;
  cancel: AbortController;
  listed: Promise<ListedPage>;
  prepared: Promise<PreparedPage>;
}

/** Page entries in listing order: mapped calls and rejected items, with positions where known. */
interface PageEntry {
  uid: string;
  updatedAt: string;
  fingerprint: string;
  call: ListedCall | null;
  deadLetter: DeadLetter | null;
}

export class LocationSync {
  readonly locationUid: string;
  private committed: LocationOffset;
  private position: LocationOffset;
  private traversal: TraversalState | null = null;
  private busy = false;
  /** The sink's producer generation the offsets in memory were read or written under (RecordSink.generation). */
  private sinkGeneration: number | undefined;
  private readonly traversalSettings: TraversalSettings;
  private readonly location: string;
  private readAhead: ReadAhead | null = null;
  /** This location's counters incremented on every page (idle polls included), looked up once. */
  private readonly pagesFetched: { inc(value?: number): void };
  private readonly recordsPublished: { inc(value?: number): void };
  /** The watermark last given to metrics.observeHighWater. */
  private observedWatermark: string | null = null;
  readonly totals: LocationTotals = emptyTotals();

  constructor(private readonly options: LocationSyncOptions) {
    if (options.settings.boundaryCap < 1) throw new RangeError('boundaryCap must be >= 1');
    this.locationUid = options.locationUid;
    this.committed = options.startOffset;
    this.position = options.startOffset;
    this.sinkGeneration = options.sink.generation?.();
    this.location = options.metrics.location(options.locationUid);
    this.pagesFetched = options.metrics.pagesFetched.labels({ location: this.location });
    this.recordsPublished = options.metrics.recordsPublished.labels({ location: this.location });
    this.traversalSettings = {
      locationUid: options.locationUid,
      pageSize: options.settings.pageSize,
      startSince: options.settings.startSince,
      boundaryCap: options.settings.boundaryCap,
    };
  }

  /** The offset last committed by the sink (or the starting offset). */
  get offset(): LocationOffset {
    return this.committed;
  }

  /** The id of the traversal in progress, null between traversals. */
  get traversalId(): string | null {
    return this.traversal?.id ?? null;
  }

  /** Runs pages until the traversal completes. */
  async runTraversal(signal?: AbortSignal): Promise<LocationTotals> {
    for (;;) {
      const report = await this.runPage(signal);
      if (report.complete) return { ...this.totals };
    }
  }

  /**
   * Fetches, processes and commits one page of the current traversal (starting one if none is open).
   * Not re-entrant: one page at a time per location (the scheduler guarantees it).
   */
  async runPage(signal?: AbortSignal): Promise<PageReport> {
    if (this.busy) throw new Error(`LocationSync.runPage re-entered for location ${this.locationUid}`);
    this.busy = true;
    try {
      return await this.processPage(signal);
    } finally {
      this.busy = false;
    }
  }

  private async processPage(signal?: AbortSignal): Promise<PageReport> {
    const traversal = this.traversal ?? this.beginTraversal();
    const request = nextPageRequest(this.position, this.traversalSettings);
    if (request.kind === 'next') traversal.detector.sent(request.cursor);

    const ahead = this.takeReadAhead(request);
    const hint = this.requestHint();
    let page;
    try {
      page = await (ahead?.listed ?? this.options.api.listPage(request, signal, hint));
    } catch (error) {
      if (error instanceof InvalidCursorError && request.kind === 'next')
        return this.restart(traversal, error);
      throw error;
    }
    this.pagesFetched.inc();
    traversal.pages += 1;
    if (traversal.detector.isLoop(page.nextCursor)) {
      throw new FatalError(
        'CURSOR_LOOP',
        `the calls API returned a cursor already followed in this traversal (location ${this.locationUid}); stopping this location`,
        {
          details: { locationUid: this.locationUid, traversal: traversal.id },
        },
      );
    }

    const { unpositioned, outcome, enriched } = await (ahead?.prepared ??
      this.prepare(this.position, page, signal, hint));
    if (outcome.belowWatermark.length > 0) {
      traversal.log.warn(
        {
          count: outcome.belowWatermark.length,
          watermark: this.position.watermark,
          uids: outcome.belowWatermark.slice(0, 10).map((e) => e.uid),
        },
        'records older than the watermark were listed (the API broke its sort order); published them again rather than risk losing them',
      );
    }

    const calls: Call[] = [];
    const deadLetters: DeadLetter[] = [
      ...outcome.accepted.flatMap((e) => (e.deadLetter === null ? [] : [e.deadLetter])),
      ...unpositioned,
    ];
    let redacted = 0;
    const tombstones: string[] = [];
    for (const item of enriched) {
      if (item.unenriched?.reason === 'gone' && this.options.settings.tombstoneGone === true) {
        traversal.log.info({ uid: item.listed.uid }, 'call gone (GET answered not found): tombstone');
        tombstones.push(item.listed.uid);
        continue;
      }
      const call = applyPrivacy(completeCall(item.listed, item.enrichment), this.options.settings.privacy);
      if (call.customerPhoneNumberRedacted) redacted += 1;
      calls.push(call);
    }
    const unenriched = this.reportUnenriched(traversal, enriched);

    signal?.throwIfAborted();
    const commit: PageCommit = {
      locationUid: this.locationUid,
      calls,
      deadLetters,
      offset: outcome.offset,
      startOffset: this.position,
      committed: this.committed,
      ...(tombstones.length > 0 && { tombstones }),
      source: {
        traversalId: traversal.id,
        page: traversal.pages,
        since: this.position.since,
        cursor: request.kind === 'next' ? request.cursor : null,
      },
    };
    let result: CommitOutcome;
    try {
      if (this.isIdle(commit)) result = { kind: 'stored' };
      else {
        if (!outcome.complete) this.startReadAhead(outcome.offset, signal);
        result = await this.commitWithRetry(commit, signal);
      }
    } catch (error) {
      this.dropReadAhead();
      throw error;
    }
    if (result.kind === 'superseded') {
      // Another writer stored a newer offset since: continue from it (the page is not published).
      this.dropReadAhead();
      this.committed = result.stored;
      this.position = result.stored;
      traversal.detector.reset();
      return { complete: false, restarted: false, published: 0 };
    }

    this.committed = outcome.offset;
    this.position = outcome.offset;
    if (outcome.accepted.length > 0) traversal.restartsWithoutProgress = 0;
    this.count(traversal, {
      published: calls.length,
      deadLetters,
      deduplicated: outcome.duplicates.length,
      redacted,
      belowWatermark: outcome.belowWatermark.length,
      unenriched,
    });
    if (!outcome.complete) return { complete: false, restarted: false, published: calls.length };
    this.endTraversal(traversal);
    return { complete: true, restarted: false, published: calls.length };
  }

  /** Maps, deduplicates (from `from`) and enriches a listed page: the work before its commit. */
  private async prepare(
    from: LocationOffset,
    page: ListedPage,
    signal?: AbortSignal,
    hint?: RequestHint,
  ): Promise<PreparedPage> {
    const { entries, unpositioned } = this.mapPage(page.items);
    const outcome = applyPage(
      from,
      entries,
      page.nextCursor,
      this.options.settings.boundaryCap,
      this.options.settings.boundaryMaxBytes,
    );
    const acceptedCalls = outcome.accepted.flatMap((e) => (e.call === null ? [] : [e.call]));
    const enriched = await this.options.enricher.enrich(acceptedCalls, signal, hint);
    return { unpositioned, outcome, enriched };
  }

  /** Lists and prepares the page after `from` while the current page commits. */
  private startReadAhead(from: LocationOffset, signal?: AbortSignal): void {
    this.dropReadAhead();
    const request = nextPageRequest(from, this.traversalSettings);
    const cancel = new AbortController();
    const combined = signal === undefined ? cancel.signal : AbortSignal.any([signal, cancel.signal]);
    const hint = this.requestHint();
    const listed = this.options.api.listPage(request, combined, hint);
    const prepared = listed.then((page) => this.prepare(from, page, combined, hint));
    // Its failures surface when the page's turn comes (or never, if it is dropped).
    prepared.catch(() => undefined);
    this.readAhead = { from, request, signal: combined, cancel, listed, prepared };
  }

  /** The page read ahead, when it starts where the next page does; any other is dropped. */
  private takeReadAhead(request: PageRequest): ReadAhead | null {
    const ahead = this.readAhead;
    this.readAhead = null;
    if (ahead === null) return null;
    const usable =
      ahead.from === this.position &&
      !ahead.signal.aborted &&
      JSON.stringify(ahead.request) === JSON.stringify(request);
    if (usable) return ahead;
    ahead.cancel.abort();
    return null;
  }

  /** The rate limiter's priority of this location's requests (priority.ts). */
  private requestHint(): RequestHint {
    return requestHint(this.totals.traversalsCompleted, this.position.since, this.options.clock.now());
  }

  private dropReadAhead(): void {
    this.readAhead?.cancel.abort();
    this.readAhead = null;
  }

  private beginTraversal(): TraversalState {
    const id = randomUUID().slice(0, 8);
    const { logger } = this.options;
    let log: Logger | undefined;
    const locationUid = this.locationUid;
    const state: TraversalState = {
      id,
      startedAt: this.options.clock.now(),
      detector: new CursorLoopDetector(),
      restartsWithoutProgress: 0,
      pages: 0,
      published: 0,
      deadLettered: 0,
      deduplicated: 0,
      // Made on first use: an idle poll logs nothing at info, and a child logger per traversal was a
      // measurable share of its CPU (pino serialises the bindings when the child is made).
      get log() {
        return (log ??= logger.child({ location: locationUid, traversal: id }));
      },
    };
    // Debug: most traversals of a running connector are idle polls (one page, nothing new), and two info
    // lines each would be hundreds of lines a second at 10,000 locations. 'traversal complete' says the rest.
    if (logger.isLevelEnabled('debug'))
      state.log.debug(
        { since: this.position.since, resumingCursor: this.position.cursor !== null },
        'traversal started',
      );
    this.traversal = state;
    return state;
  }

  private endTraversal(traversal: TraversalState): void {
    const now = this.options.clock.now();
    this.options.metrics.traversalDuration.observe((now - traversal.startedAt) / 1000);
    this.options.metrics.observeTraversalSuccess(this.locationUid, now);
    this.totals.traversalsCompleted += 1;
    const idle = traversal.pages === 1 && traversal.published === 0 && traversal.deadLettered === 0;
    const level = idle ? 'debug' : 'info';
    if (this.options.logger.isLevelEnabled(level))
      traversal.log[level](
        {
          pages: traversal.pages,
          published: traversal.published,
          deadLettered: traversal.deadLettered,
          deduplicated: traversal.deduplicated,
          since: this.committed.since,
          durationMs: now - traversal.startedAt,
        },
        'traversal complete',
      );
    this.traversal = null;
  }

  private restart(traversal: TraversalState, error: InvalidCursorError): PageReport {
    traversal.restartsWithoutProgress += 1;
    if (traversal.restartsWithoutProgress > MAX_RESTARTS_WITHOUT_PROGRESS) {
      this.traversal = null;
      throw new RetriableError(
        'CURSOR_RESTARTS_EXHAUSTED',
        `the calls API rejected ${traversal.restartsWithoutProgress} cursors in a row without progress (location ${this.locationUid}); trying again later`,
        { cause: error },
      );
    }
    this.position = restartAfterInvalidCursor(this.position);
    traversal.detector.reset();
    const { apiCode, status, recognised, detail } = error.details;
    this.options.metrics.cursorRestarts.inc({
      location: this.location,
      reason: recognised ? 'invalid_cursor' : 'rejected_4xx',
    });
    traversal.log.warn(
      {
        apiCode,
        status,
        recognised,
        api: detail,
        since: this.position.since,
        boundary: this.position.boundary.length,
      },
      `cursor rejected (${detail}): restarting from the watermark`,
    );
    return { complete: false, restarted: true, published: 0 };
  }

  /**
   * Logs (one line per page) and tallies the calls published unenriched although enrichment is on. Their
   * customer number was redacted by the privacy policy (unknown privacy = private).
   */
  private reportUnenriched(
    traversal: TraversalState,
    items: readonly EnrichedItem[],
  ): Map<UnenrichedReason, number> {
    const tally = new Map<UnenrichedReason, number>();
    const examples: { uid: string; reason: UnenrichedReason; detail: string }[] = [];
    for (const item of items) {
      if (item.unenriched === null) continue;
      const { reason, detail } = item.unenriched;
      tally.set(reason, (tally.get(reason) ?? 0) + 1);
      if (examples.length < 5) examples.push({ uid: item.listed.uid, reason, detail });
    }
    if (examples.length > 0) {
      const onlyGone = tally.size === 1 && tally.has('gone');
      traversal.log[onlyGone ? 'info' : 'warn'](
        { counts: Object.fromEntries(tally), examples },
        'calls published unenriched, customer number redacted (see examples for what the single-call API said)',
      );
    }
    return tally;
  }

  private mapPage(items: readonly MappedItem[]): { entries: PageEntry[]; unpositioned: DeadLetter[] } {
    const entries: PageEntry[] = [];
    const unpositioned: DeadLetter[] = [];
    for (const mapped of items) {
      if (mapped.ok)
        entries.push({
          uid: mapped.call.uid,
          updatedAt: mapped.call.updatedAt,
          fingerprint: this.options.settings.fingerprints.fields(mapped.call),
          call: mapped.call,
          deadLetter: null,
        });
      else if (mapped.position === null)
        unpositioned.push(this.deadLetter(mapped.error, mapped.payload, null));
      else
        entries.push({
          ...mapped.position,
          fingerprint: this.options.settings.fingerprints.text(mapped.payload),
          call: null,
          deadLetter: this.deadLetter(mapped.error, mapped.payload, mapped.position.uid),
        });
    }
    return { entries, unpositioned };
  }

  private deadLetter(error: SkippableError, payload: string, uid: string | null): DeadLetter {
    return { locationUid: this.locationUid, uid, code: error.code, message: error.message, payload };
  }

  /**
   * An idle page needs no commit: it publishes, dead-letters and tombstones nothing, and leaves the offset
   * equal to what is known to be stored. Polling quiet locations then costs the HTTP request only, not a
   * Kafka transaction and an offset record per poll. A commit is still made whenever the store may differ
   * from `committed`: when `position` moved away from it uncommitted
   * (a cursor rejected and cleared, which the store must forget, or a cursor to clear at the traversal's end).
   */
  private isIdle(commit: PageCommit): boolean {
    return (
      commit.calls.length === 0 &&
      commit.deadLetters.length === 0 &&
      (commit.tombstones?.length ?? 0) === 0 &&
      sameOffset(this.position, this.committed) &&
      sameOffset(commit.offset, this.committed)
    );
  }

  /**
   * Commits, committing a rejected page again after a backoff while the commit retry policy allows
   * (then its reason propagates). Resolves 'stored' or 'superseded'; adopts the generation an outcome was
   * read under, so the page committed again carries it.
   */
  private async commitWithRetry(commit: PageCommit, signal?: AbortSignal): Promise<CommitOutcome> {
    const policy = this.options.settings.commitRetry;
    for (let attempt = 1; ; attempt++) {
      const result = await this.options.sink.commitPage({
        ...commit,
        ...(this.sinkGeneration !== undefined && { generation: this.sinkGeneration }),
      });
      if (result.generation !== undefined) this.sinkGeneration = result.generation;
      if (result.kind !== 'rejected') return result;
      if (!mayRetry(policy, attempt)) throw result.reason;
      const wait = backoffDelayMs(policy, attempt, this.options.clock.random());
      this.traversal?.log.warn(
        { code: result.reason.code, attempt, waitMs: wait },
        'page commit failed; retrying',
      );
      signal?.throwIfAborted();
      await this.options.clock.sleep(wait, signal);
    }
  }

  private count(
    traversal: TraversalState,
    page: {
      published: number;
      deadLetters: readonly DeadLetter[];
      deduplicated: number;
      redacted: number;
      belowWatermark: number;
      unenriched: ReadonlyMap<UnenrichedReason, number>;
    },
  ): void {
    const { metrics } = this.options;
    const location = this.location;
    this.recordsPublished.inc(page.published);
    if (page.deduplicated > 0)
      metrics.recordsSkipped.inc({ location, reason: 'boundary_dedupe' }, page.deduplicated);
    if (page.deadLetters.length > 0)
      metrics.recordsSkipped.inc({ location, reason: 'dlq' }, page.deadLetters.length);
    if (page.redacted > 0) metrics.recordsRedacted.inc({ location }, page.redacted);
    if (page.belowWatermark > 0) metrics.recordsBelowWatermark.inc({ location }, page.belowWatermark);
    for (const dl of page.deadLetters) metrics.deadLetters.inc({ code: dl.code });
    for (const [reason, n] of page.unenriched) metrics.recordsUnenriched.inc({ location, reason }, n);
    // An idle page leaves the watermark as it was: parsed and observed again only when it moved.
    const mark = this.committed.watermark;
    if (mark !== null && mark !== this.observedWatermark) {
      const watermark = parseInstant(mark);
      if (watermark !== null) metrics.observeHighWater(this.locationUid, toEpochMillis(watermark));
      this.observedWatermark = mark;
    }
    traversal.published += page.published;
    traversal.deadLettered += page.deadLetters.length;
    traversal.deduplicated += page.deduplicated;
    this.totals.pages += 1;
    this.totals.published += page.published;
    this.totals.deadLettered += page.deadLetters.length;
    this.totals.deduplicated += page.deduplicated;
    this.totals.redacted += page.redacted;
    this.totals.belowWatermark += page.belowWatermark;
  }
}
