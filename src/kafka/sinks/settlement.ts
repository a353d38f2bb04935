/**
 * The read-back after a failed write of the exactly-once sink, and the plan of what to write again. The sink only
 * reports facts (aborted, or unknown: EndTxn failed); the pages are decided by the one rule (sync/location/commit-outcome.ts)
 * over those facts and what this reads back:
 * - the stored offsets of the pages' locations (only their partitions of the offsets topic), under a producer
 *   initialised since the write (its initialisation waited for pending markers), once every transaction open there
 *   has ended (KafkaOffsetStore `awaitOpenTransactions`: a read stopped short by one would show the committed
 *   offset and pass for an abort). The rule says stored, rejected or superseded per page, or 'read-again' (a stale
 *   read, never adopted): read again after a backoff, MAX_UNSETTLED_READS times at most (about a minute and a half),
 *   then the process stops (KAFKA_OFFSETS_UNSETTLED) and a restart reads the store afresh;
 * - when that would not store every page, whether the write's records outside the offsets topic are visible
 *   (`published`, from its witnesses). All visible, it committed; some, it committed and an operator aborted part
 *   of it since (a hanging transaction); none, it aborted.
 * What Kafka lost of a committed page is written again before the page is stored (`rewritePlan`, writeAgain).
 */
import { ConnectorError, FatalError, RetriableError } from '../../errors/index.js';
import type { Logger } from '../../logging/logger.js';
import type { ConnectorMetrics } from '../../metrics/metrics.js';
import {
  commitOutcomes,
  publishedFrom,
  type Published,
  type Verdict,
} from '../../sync/location/commit-outcome.js';
import type { LocationOffset } from '../../sync/model.js';
import { backoffDelayMs, type Backoff } from '../../time/backoff.js';
import type { Clock } from '../../time/clock.js';
import { describeKafkaError } from '../client/kafka-errors.js';
import { offsetOnly, type PageMessages, type SinkTopics } from '../records/page-messages.js';
import { lostPart, lostTopicCounts, type PublishedCheck, type RecordPosition } from './commit-witnesses.js';
import { OwnTransactionHealer } from './hanging-transaction-heal.js';
import { settlePages, type PendingPage } from './page-queue.js';
import type { ProducerLifecycle } from './producer-lifecycle.js';
import { notPermittedError } from './sink-errors.js';
import type { TransactionalProducer } from './transactional-producer.js';

/** Reads the offsets of some locations only (KafkaOffsetStore: just the partitions their keys hash to). */
export interface LocationOffsetReader {
  /** The stored offset of each of `locationUids` that has one, read to the end (read_committed). */
  loadLocations(locationUids: readonly string[]): Promise<Map<string, LocationOffset>>;
}

/**
 * How a failed transaction ends for its pages: rejected (the sink writes nothing more: fatal, taken over,
 * closing), or facts for the rule (a write aborted, or of unknown outcome).
 */
export type Failure =
  | { reject: Error }
  | {
      write: 'aborted' | 'unknown';
      reason: RetriableError;
      witnesses?: readonly RecordPosition[];
      /**
       * Set when the write sent records (a failed send or commit): where it began on each partition a send answered
       * (offsets topic included), what proves a hanging transaction ours (hanging-transaction-heal-rule.ts).
       */
      firsts?: readonly RecordPosition[];
    };

/** Settles the pages of a write once decided; `stored`: the write turned out committed. */
export type Settlement = (() => void) & { stored: boolean };

/** Between read-backs of an unsettled write, and between writes again: 0.5 s doubling to 30 s, no jitter. */
const SETTLE_READ_BACKOFF: Readonly<Backoff> = {
  initialDelayMs: 500,
  multiplier: 2,
  maxDelayMs: 30_000,
  jitter: 0,
};

/**
 * Reads of the offsets topic that may lag before the sink gives up on them: with the backoff (0.5 s doubling,
 * at most 30 s) about a minute and a half.
 */
export const MAX_UNSETTLED_READS = 8;

/** The wait before read-back (or write again) number `attempt` (1: the first after the first try). */
export function readBackDelayMs(attempt: number): number {
  return backoffDelayMs(SETTLE_READ_BACKOFF, attempt, 0);
}

/**
 * What goes again of each decided page (same order; undefined: nothing, the verdict settles it): its offset record
 * alone ('rewrite-offset'), or its records on the partitions in `lost` with its offset ('republish-lost'; `counts`:
 * the partition counts of their topics, see lostPart).
 */
export function rewritePlan(
  pages: readonly PageMessages[],
  verdicts: readonly Verdict[],
  lost: readonly RecordPosition[],
  topics: SinkTopics,
  counts: ReadonlyMap<string, number | undefined>,
): Array<PageMessages | undefined> {
  return pages.map((page, i) => {
    if (verdicts[i] === 'rewrite-offset') return offsetOnly(page);
    if (verdicts[i] === 'republish-lost') return lostPart(page, lost, topics, counts);
    return undefined;
  });
}

/** The metrics of writing again and of healing our own hanging transactions. */
export type SettlementMetrics = Pick<ConnectorMetrics, 'pageRewrites' | 'hangingTransactionsHealed'>;

export interface SettlerOptions {
  /** The sink's producer: read-backs wait for one initialised since the write. */
  producers: Pick<
    ProducerLifecycle<TransactionalProducer>,
    'acquire' | 'discard' | 'generation' | 'state' | 'isClosing' | 'closedSignal'
  >;
  offsetStore: LocationOffsetReader;
  /** Unset: never asked, the offsets read back alone decide. */
  published?: PublishedCheck | undefined;
  /** Unset or failing: a 'republish-lost' page's records all go again. */
  partitionCount?: ((topic: string) => Promise<number>) | undefined;
  topics: SinkTopics;
  /** The error the sink writes nothing more with, if it does not write any more. */
  fatal: () => ConnectorError | undefined;
  /** Stands the sink down with `error` (told once); returns the sink's first fatal error. */
  fail: (error: FatalError) => FatalError;
  /** Puts a page at the head of the sink's queue. */
  requeue: (page: PendingPage) => void;
  metrics: SettlementMetrics;
  logger: Logger;
  clock: Clock;
}

/** Decides the pages of failed writes (see the module comment). */
export class Settler {
  /** Ends a hanging transaction of our own failed writes (hanging-transaction-heal.ts). */
  private readonly healer: OwnTransactionHealer;

  constructor(private readonly options: SettlerOptions) {
    this.healer = new OwnTransactionHealer(options);
  }

  /**
   * Decides the pages of a failed write by the rule, reading their locations' offsets when the facts do
   * not decide (or at once, with `readFirst`) and again after a backoff while a read does not decide
   * (a stale read). Resolves to what settles the pages' promises (called by the caller once its metrics
   * are counted), `stored` when the write turned out committed.
   */
  async settle(pages: readonly PendingPage[], failure: Failure, readFirst = false): Promise<Settlement> {
    const { producers, clock } = this.options;
    const log = this.options.logger;
    const rejectAll = (error: Error): Settlement =>
      Object.assign(() => pages.forEach((page) => page.reject(error)), { stored: false });
    if ('reject' in failure) return rejectAll(failure.reject);
    const at = pages.map((p) => p.at);
    let verdicts: Verdict[] = readFirst ? pages.map(() => 'read-again') : commitOutcomes(at, failure);
    let unsettledReads = 0;
    // Whether the write's records outside the offsets topic are visible, and which partitions' are not: asked
    // once, only when the offsets read would not store every page (a read costs a throw-away consumer group).
    let published: Published | undefined;
    let lost: readonly RecordPosition[] = [];
    let witnesses = failure.write === 'unknown' ? (failure.witnesses ?? []) : [];
    if ('firsts' in failure && failure.firsts !== undefined) this.healer.rememberWrite(failure.firsts);
    const healed = new Set<string>();
    for (let attempt = 0; verdicts.includes('read-again'); attempt += 1) {
      // After a timed-out close, reading would build a producer nobody disconnects: leave the outcome to
      // the next start (its producer initialisation settles the transaction, its read is the truth).
      if (producers.state === 'closed' || (producers.isClosing && attempt > 0)) {
        return rejectAll(
          new RetriableError(
            'KAFKA_COMMIT_OUTCOME_UNKNOWN',
            `the sink closed before the outcome of a failed commit was known: ${failure.reason.message}`,
            { cause: failure.reason },
          ),
        );
      }
      try {
        // A producer initialised since the write: its initialisation waited for our pending markers.
        await producers.acquire();
        const generation = producers.generation;
        const uids = [...new Set(pages.map((p) => p.messages.locationUid))];
        const stored = await this.options.offsetStore.loadLocations(uids);
        const read = {
          stored: pages.map((p) => stored.get(p.messages.locationUid) ?? null),
          afterInit: true,
          generation,
        };
        let next = commitOutcomes(at, { ...failure, read, published });
        if (witnesses.length > 0 && !next.every(isStored)) {
          // Until it answers (a transaction still open there), the verdicts stay undecided: read again.
          ({ published, lost } = await this.isPublished(witnesses));
          witnesses = [];
          next = commitOutcomes(at, { ...failure, read, published });
        }
        verdicts = next;
        const undecided = pages.filter((_, i) => verdicts[i] === 'read-again');
        if (undecided.length === 0)
          log.info(
            {
              write: failure.write,
              witnesses: failure.write === 'unknown' ? failure.witnesses?.length : undefined,
              published,
              verdicts: verdictCounts(verdicts),
            },
            'settled the outcome of a failed write',
          );
        else if ((unsettledReads += 1) >= MAX_UNSETTLED_READS) return rejectAll(this.unsettled(undecided));
        else
          log.warn(
            { attempt, undecided: undecided.length },
            'the offsets read back lag what this sink committed; reading again',
          );
      } catch (error) {
        const fatal = this.options.fatal() ?? this.fatalOf(error);
        if (fatal !== undefined) return rejectAll(fatal);
        await this.healer.heal(error, healed);
        log.warn(
          {
            ...(error instanceof ConnectorError ? { code: error.code } : {}),
            err: describeKafkaError(error),
            attempt,
          },
          'cannot settle the failed write yet; retrying',
        );
      }
      if (verdicts.includes('read-again'))
        // Ended early by close(): the next attempt then rejects the pages.
        await clock.sleep(readBackDelayMs(attempt + 1), producers.closedSignal).catch(() => undefined);
    }
    const decided = verdicts;
    // Asked once for the write, not per page: each count is a metadata request.
    const counts = decided.includes('republish-lost')
      ? await lostTopicCounts(lost, this.options.partitionCount)
      : new Map<string, number | undefined>();
    const again = rewritePlan(
      pages.map((p) => p.messages),
      decided,
      lost,
      this.options.topics,
      counts,
    );
    return Object.assign(
      () => {
        settlePages(
          pages.filter((_, i) => again[i] === undefined),
          decided.filter((_, i) => again[i] === undefined),
        );
        for (const [i, page] of pages.entries()) {
          const messages = again[i];
          if (messages !== undefined) this.writeAgain(page, messages);
        }
      },
      // Some page shows its offset stored, or the write's records are visible: the transaction committed.
      { stored: again.some((m) => m !== undefined) || decided.some(isStored) },
    );
  }

  /**
   * Whether a commit of unknown outcome is published, from its witnesses (PublishedCheck, publishedFrom). A
   * refused read (no Read ACL on the calls topic) is not the sink's failure: the offsets read alone decide, as
   * without the check. Rejects with a retriable error while a witness's transaction is open (settle reads again).
   */
  private async isPublished(
    witnesses: readonly RecordPosition[],
  ): Promise<{ published: Published | undefined; lost: RecordPosition[] }> {
    if (this.options.published === undefined) return { published: undefined, lost: [] };
    try {
      const visible = await this.options.published.visible(witnesses);
      return { published: publishedFrom(visible), lost: witnesses.filter((_, i) => visible[i] === false) };
    } catch (error) {
      if (!(error instanceof FatalError)) throw error;
      this.options.logger.warn(
        { err: describeKafkaError(error) },
        'cannot read the calls of a commit of unknown outcome; its offsets read back alone decide it',
      );
      return { published: undefined, lost: [] };
    }
  }

  /**
   * A page whose transaction committed while Kafka lost part of it since (an operator aborted a hanging part,
   * see sync/location/commit-outcome.ts): `messages`, its offset record alone ('rewrite-offset') or with its records on
   * the aborted partitions ('republish-lost'), go again at the head of the queue, and the page settles with that
   * write. A rejected write is tried again after a backoff (none of it is visible, so trying again is always
   * safe); the page is rejected only when the sink writes nothing more.
   */
  private writeAgain(page: PendingPage, messages: PageMessages, attempt = 1): void {
    this.options.logger.warn(
      {
        locationUid: page.messages.locationUid,
        records: messages.calls.length + messages.deadLetters.length,
        attempt,
      },
      "the page's transaction committed but Kafka lost part of it since (a hanging transaction aborted?): writing that part and its offset again",
    );
    this.options.metrics.pageRewrites.inc();
    const copy: PendingPage = {
      messages,
      // Decided by a committed transaction, not by a read under some producer: written under any generation.
      generation: undefined,
      at: page.at,
      resolve: (outcome) => {
        if (outcome.kind !== 'rejected') return page.resolve(outcome);
        this.options.clock.sleep(readBackDelayMs(attempt), this.options.producers.closedSignal).then(
          () => {
            const fatal = this.options.fatal();
            if (fatal === undefined) this.writeAgain(page, messages, attempt + 1);
            else page.reject(fatal);
          },
          () => page.reject(closedBeforeRewrite(outcome.reason)),
        );
      },
      reject: page.reject,
    };
    this.options.requeue(copy);
  }

  /**
   * The offsets topic kept answering, MAX_UNSETTLED_READS times since the producer initialised, offsets the
   * rule cannot take (older than committed, missing, or contradicting each other). Never adopted; rather
   * than hold every location's pages behind it for ever, the process stops (onFatal) and a restart reads
   * the stored offsets afresh.
   */
  private unsettled(pages: readonly PendingPage[]): FatalError {
    const locations = [...new Set(pages.map((p) => p.messages.locationUid))];
    return this.options.fail(
      new FatalError(
        'KAFKA_OFFSETS_UNSETTLED',
        `the offsets topic ${this.options.topics.offsets} still shows, after ${MAX_UNSETTLED_READS} reads since the producer initialised, ` +
          `offsets of ${locations.length} location(s) older than those this instance committed (or none): not adopted, ` +
          `the process stops so that a restart reads the stored offsets afresh. Were offsets reset or deleted while the ` +
          `connector ran?`,
        { details: { locations: locations.slice(0, 10) } },
      ),
    );
  }

  /** A FatalError for an error met while settling, or undefined when it is worth trying again. */
  private fatalOf(error: unknown): FatalError | undefined {
    if (error instanceof FatalError) return this.options.fail(error);
    const refused = notPermittedError(
      error,
      'to initialise the producer or read the offsets',
      'check the ACLs',
    );
    return refused === undefined ? undefined : this.options.fail(refused);
  }
}

/** How many pages got each verdict, for the log line of a settled write. */
function verdictCounts(verdicts: readonly Verdict[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const v of verdicts) {
    const kind = typeof v === 'string' ? v : v.kind;
    counts[kind] = (counts[kind] ?? 0) + 1;
  }
  return counts;
}

function isStored(verdict: Verdict): boolean {
  return typeof verdict === 'object' && verdict.kind === 'stored';
}

function closedBeforeRewrite(cause: RetriableError): RetriableError {
  return new RetriableError(
    'KAFKA_SINK_CLOSED',
    'the sink closed before it wrote again what Kafka lost of a committed page; the next start reads the older offset and publishes the page again',
    { cause },
  );
}

/** What settles the pages of a write that committed. */
export function committed(pages: readonly PendingPage[]): Settlement {
  const outcomes = (): void =>
    settlePages(
      pages,
      commitOutcomes(
        pages.map((p) => p.at),
        { write: 'committed' },
      ),
    );
  return Object.assign(outcomes, { stored: true });
}
