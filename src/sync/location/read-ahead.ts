/**
 * A location's read-ahead: while a page that is not the traversal's last commits, the next page is listed
 * and prepared (page-pipeline.ts, preparePage) from the offset that page will store, one page ahead and
 * never more, so the location's listing and enrichment overlap its commit instead of following it.
 *
 * Contract: `take` hands the page over only when it starts exactly where the next page does (the same
 * starting offset object, the same request) and was not cancelled; any other is dropped and its requests
 * cancelled. The caller drops it whenever the commit did not store that offset (a failure, a superseded
 * commit, an abort). Its failures surface when it is taken, or never if it is dropped.
 *
 * Kept fresh (with a KeepFresh): a prepared page whose single-call answers near privacy.maxEnrichmentAgeMs
 * while it waits is refreshed in the background when its state is next asked (`stateFrom`), and is
 * 'pending' meanwhile, so the turn that takes a 'ready' page commits it without asking anything again. A
 * turn that finds its page too old all the same hands it back (`resume`): it is refreshed here, not in the
 * turn, which would hold the location's live poll and nudges for the page's single calls.
 */
import type { LocationOffset } from '../model.js';
import type { PreparedPage } from './page-pipeline.js';
import type { ListedPage, PageRequest } from '../ports.js';

/**
 * How a page is read, in its turn or ahead: listed, then prepared from what was listed. A page in its turn
 * takes the two steps apart (a rejected cursor or a cursor loop stops it before it is prepared).
 */
export interface PageReader {
  list(signal?: AbortSignal): Promise<ListedPage>;
  prepare(listed: ListedPage, signal?: AbortSignal): Promise<PreparedPage>;
}

/** The page read ahead, as its turn uses it. */
export interface PageAhead {
  listed: Promise<ListedPage>;
  prepared: Promise<PreparedPage>;
  /** A history lane's page: the live window's mark taken when its listing was requested (live-window.ts). */
  mark?: number;
  /** How many times a turn handed this page back because its answers were too old (`resume`). */
  handedBack?: number;
}

/** How a lane's prepared page is kept committable while it waits (page-reading.ts keepingFresh). */
export interface KeepFresh {
  now(): number;
  /** When `prepared` must be refreshed before its turn may take it; null: never. */
  staleAt(prepared: PreparedPage): number | null;
  /** `prepared` with its old answers asked again (under `signal`). */
  refresh(prepared: PreparedPage, signal: AbortSignal): Promise<PreparedPage>;
}

interface Pending extends PageAhead {
  /** The prepared page once it settled successfully (null while pending, or when it failed). */
  value: PreparedPage | null;
  from: LocationOffset;
  request: PageRequest;
  signal: AbortSignal;
  cancel: AbortController;
  /** Resolves (never rejects) once `prepared` settled, or the page was dropped. */
  settled: Promise<void>;
  done: boolean;
}

/**
 * The page read ahead, as a scheduler sees it: none, still being listed or prepared (`settled` resolves
 * when it is ready or dropped), or ready (prepared, or failed: taking it costs no request).
 */
export type AheadState =
  { state: 'none' } | { state: 'pending'; settled: Promise<void> } | { state: 'ready' };

/** Lists and prepares a page under `signal` (the read-ahead's own, cancelled when dropped). */
export type ReadPage = (signal: AbortSignal) => PageAhead;

/** Reading a page ahead with `reader`: listed, then prepared as soon as it is listed; `mark` carried along. */
export function readingAhead(reader: PageReader, mark?: number): ReadPage {
  return (signal) => {
    const listed = reader.list(signal);
    const prepared = listed.then((page) => reader.prepare(page, signal));
    return { listed, prepared, ...(mark !== undefined && { mark }) };
  };
}

export class ReadAhead {
  private pending: Pending | null = null;

  /** `fresh`: keeps the page committable while it waits (see the module comment); unset: as prepared. */
  constructor(private readonly fresh?: KeepFresh) {}

  /** Whether a page too old at its turn is handed back to be refreshed here (`resume`). */
  get refreshes(): boolean {
    return this.fresh !== undefined;
  }

  /** Starts reading the page of `request` from `from` (dropping any other), under `signal` when given. */
  start(from: LocationOffset, request: PageRequest, read: ReadPage, signal?: AbortSignal): void {
    this.drop();
    const cancel = new AbortController();
    const combined = signal === undefined ? cancel.signal : AbortSignal.any([signal, cancel.signal]);
    const ahead = read(combined);
    const pending: Pending = {
      ...ahead,
      value: null,
      from,
      request,
      signal: combined,
      cancel,
      done: false,
      settled: Promise.resolve(),
    };
    this.watch(pending);
    this.pending = pending;
  }

  /**
   * Puts back the page of `request` from `from`, listed and prepared, that its turn found too old to commit:
   * it is refreshed in the background (under `signal`) and is ready again once refreshed.
   */
  resume(
    from: LocationOffset,
    request: PageRequest,
    page: { listed: ListedPage; prepared: PreparedPage; mark?: number; handedBack?: number },
    signal?: AbortSignal,
  ): void {
    const fresh = this.fresh;
    if (fresh === undefined) throw new Error('ReadAhead.resume without a KeepFresh');
    const { listed, prepared, mark } = page;
    this.start(
      from,
      request,
      (s) => ({
        listed: Promise.resolve(listed),
        prepared: fresh.refresh(prepared, s),
        ...(mark !== undefined && { mark }),
        handedBack: (page.handedBack ?? 0) + 1,
      }),
      signal,
    );
  }

  /** Follows `pending.prepared` to its end: `done` (and `value`) once it settled, or once cancelled. */
  private watch(pending: Pending): void {
    const { signal } = pending;
    pending.done = false;
    pending.value = null;
    const prepared = pending.prepared;
    const cancelled = new Promise<void>((resolve) => {
      if (signal.aborted) resolve();
      else signal.addEventListener('abort', () => resolve(), { once: true });
    });
    pending.settled = Promise.race([
      prepared.then(
        (page) => {
          if (pending.prepared === prepared) pending.value = page;
        },
        () => undefined,
      ),
      cancelled,
    ]).then(() => {
      if (pending.prepared === prepared) pending.done = true;
    });
  }

  /** Starts refreshing the prepared page of `pending` when it is too old for its turn (see KeepFresh). */
  private keepFresh(pending: Pending): void {
    const { fresh } = this;
    const page = pending.value;
    if (fresh === undefined || page === null || !pending.done) return;
    const staleAt = fresh.staleAt(page);
    if (staleAt === null || fresh.now() < staleAt) return;
    pending.prepared = fresh.refresh(page, pending.signal);
    this.watch(pending);
  }

  /** The page read ahead from `from` (the same starting offset object), as a scheduler needs to know it. */
  stateFrom(from: LocationOffset): AheadState {
    const pending = this.pending;
    if (pending === null || pending.from !== from || pending.signal.aborted) return { state: 'none' };
    this.keepFresh(pending);
    return pending.done ? { state: 'ready' } : { state: 'pending', settled: pending.settled };
  }

  /** The page read ahead when it starts at `from` with `request`; any other is dropped (see the contract). */
  take(from: LocationOffset, request: PageRequest): PageAhead | null {
    const pending = this.pending;
    this.pending = null;
    if (pending === null) return null;
    if (pending.from === from && !pending.signal.aborted && samePageRequest(pending.request, request))
      return {
        listed: pending.listed,
        prepared: pending.prepared,
        ...(pending.mark !== undefined && { mark: pending.mark }),
        ...(pending.handedBack !== undefined && { handedBack: pending.handedBack }),
      };
    pending.cancel.abort();
    return null;
  }

  /** Cancels the page read ahead, if any. */
  drop(): void {
    this.pending?.cancel.abort();
    this.pending = null;
  }

  /** The live window's mark of the page read ahead, if any (PageAhead.mark). */
  get mark(): number | undefined {
    return this.pending?.mark;
  }
}

/** The same page request, field by field. */
export function samePageRequest(a: PageRequest, b: PageRequest): boolean {
  if (a.locationUid !== b.locationUid || a.limit !== b.limit) return false;
  if (a.kind === 'next') return b.kind === 'next' && a.cursor === b.cursor;
  return b.kind === 'first' && a.since === b.since && a.order === b.order;
}
