/**
 * A location's read-ahead: while a page that is not the traversal's last commits, the next page is listed
 * and prepared (page-pipeline.ts, preparePage) from the offset that page will store, one page ahead and
 * never more, so the location's listing and enrichment overlap its commit instead of following it.
 *
 * Contract: `take` hands the page over only when it starts exactly where the next page does (the same
 * starting offset object, the same request) and was not cancelled; any other is dropped and its requests
 * cancelled. The caller drops it whenever the commit did not store that offset (a failure, a superseded
 * commit, an abort). Its failures surface when it is taken, or never if it is dropped.
 */
import type { LocationOffset } from './model.js';
import type { PreparedPage } from './page-pipeline.js';
import type { ListedPage, PageRequest } from './ports.js';

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
}

interface Pending extends PageAhead {
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

  /** Starts reading the page of `request` from `from` (dropping any other), under `signal` when given. */
  start(from: LocationOffset, request: PageRequest, read: ReadPage, signal?: AbortSignal): void {
    this.drop();
    const cancel = new AbortController();
    const combined = signal === undefined ? cancel.signal : AbortSignal.any([signal, cancel.signal]);
    const ahead = read(combined);
    const pending: Pending = {
      ...ahead,
      from,
      request,
      signal: combined,
      cancel,
      done: false,
      settled: Promise.resolve(),
    };
    const cancelled = new Promise<void>((resolve) => {
      if (combined.aborted) resolve();
      else combined.addEventListener('abort', () => resolve(), { once: true });
    });
    pending.settled = Promise.race([
      ahead.prepared.then(
        () => undefined,
        () => undefined,
      ),
      cancelled,
    ]).then(() => {
      pending.done = true;
    });
    this.pending = pending;
  }

  /** The page read ahead from `from` (the same starting offset object), as a scheduler needs to know it. */
  stateFrom(from: LocationOffset): AheadState {
    const pending = this.pending;
    if (pending === null || pending.from !== from || pending.signal.aborted) return { state: 'none' };
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
