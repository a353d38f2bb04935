/**
 * The queue both RecordSinks put pages in: commitPage encodes a page and queues it, and one drain loop at a
 * time takes what is queued into the next group (a transaction, or a produce request), so pages that
 * arrive while a group is in flight go together in the next one. Each caller's promise settles with the
 * group its page ended in.
 */
import type { PageAtStake, Verdict } from '../../sync/location/commit-outcome.js';
import type { CommitOutcome, PageCommit } from '../../sync/ports.js';
import {
  pageMessages,
  type CallEncoder,
  type PageMessages,
  type SignalDoneMessage,
} from '../records/page-messages.js';

export interface PendingPage {
  messages: PageMessages;
  /** PageCommit.generation: the producer generation the page's starting offset was read under. */
  generation: number | undefined;
  /** What the rule (commit-outcome.ts) needs to judge a read-back of the page's location. */
  at: PageAtStake;
  resolve: (outcome: CommitOutcome) => void;
  reject: (error: Error) => void;
}

export function hasRecords(page: PageMessages): boolean {
  return page.calls.length > 0 || page.deadLetters.length > 0;
}

/**
 * Settles each page with its verdict (same order). A 'read-again' left here is a bug in the sink (it reads
 * until every verdict is decided, or rejects the pages), never settled silently; so is a 'rewrite-offset' or
 * 'republish-lost' (the sink writes part of those pages again first).
 */
export function settlePages(pages: readonly PendingPage[], verdicts: readonly Verdict[]): void {
  pages.forEach((page, i) => {
    const verdict = verdicts[i];
    if (verdict === undefined || typeof verdict === 'string')
      page.reject(new RangeError('the sink settled a page whose commit outcome was not decided'));
    else page.resolve(verdict);
  });
}

/**
 * How many pages from the head of `queue` the next group takes: at least one (a page larger than the cap
 * alone), then more while their messages stay within `maxBytes` and the group within `maxPages`.
 */
export function groupSize(queue: readonly PendingPage[], maxBytes: number, maxPages = Infinity): number {
  let bytes = 0;
  let count = 0;
  for (const page of queue) {
    if (count === maxPages) break;
    if (count > 0 && bytes + page.messages.bytes > maxBytes) break;
    bytes += page.messages.bytes;
    count += 1;
  }
  return count;
}

export interface PageQueueOptions {
  encoder: CallEncoder;
  connectorName: string;
  /** Exactly once: a page completing a signal carries its `done` outcome (page-messages.ts). */
  signalDone?: SignalDoneMessage;
  /** Drains the queue (called again while pages remain, never twice at once). */
  drain: (queue: PendingPage[]) => Promise<void>;
  /** Whether work remains besides the queued pages (e.g. offsets still to write). */
  pendingBesidesQueue?: () => boolean;
}

export class PageQueue {
  readonly pages: PendingPage[] = [];
  private draining: Promise<void> | undefined;

  constructor(private readonly options: PageQueueOptions) {}

  /** Encodes and queues a page; rejects at once when encoding fails (a bug, not a skippable call). */
  offer(commit: PageCommit, now: Date): Promise<CommitOutcome> {
    let messages: PageMessages;
    try {
      messages = pageMessages(
        commit,
        this.options.encoder,
        this.options.connectorName,
        now,
        this.options.signalDone,
      );
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    const at = { committed: commit.committed ?? null, offset: commit.offset };
    return new Promise<CommitOutcome>((resolve, reject) => {
      this.pages.push({ messages, generation: commit.generation, at, resolve, reject });
      this.kick();
    });
  }

  /** Puts an already encoded page at the head of the queue (the sink's own retries, never a caller's page). */
  requeue(page: PendingPage): void {
    this.pages.unshift(page);
    this.kick();
  }

  /** Resolves once no drain is running (a page queued meanwhile is drained first). */
  async drained(): Promise<void> {
    while (this.draining !== undefined) await this.draining;
  }

  private kick(): void {
    if (this.draining !== undefined) return;
    this.draining = this.options.drain(this.pages).finally(() => {
      this.draining = undefined;
      // A page queued after the loop's last check and before this callback still needs a group.
      if (this.pages.length > 0 || this.options.pendingBesidesQueue?.() === true) this.kick();
    });
  }
}
