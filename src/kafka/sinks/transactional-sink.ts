/**
 * Exactly-once RecordSink: each page's calls, dead letters and offset are written in one Kafka
 * transaction, so a read_committed consumer sees all of a page or none of it, and the stored offset
 * never runs ahead of (or behind) what was published.
 *
 * Group commit: kafkajs allows one open transaction per producer. Pages that arrive while a transaction
 * is in flight wait in a queue and all go into the next transaction (at most
 * `maxPagesPerTransaction` pages and about `maxBytesPerTransaction` bytes), so many locations pipeline
 * through one producer. Each caller's promise
 * settles with the transaction its page was in. The pages of a group that failed are committed alone until
 * each commits once, so a page that can never commit aborts only its own transactions, not every group it joins.
 *
 Outcomes: every page resolves to what the one rule (sync/commit-outcome.ts) makes of the facts this sink
 * reports; the sink decides nothing itself. Failures (each concerns every page of the transaction):
 * - a send fails: the transaction is aborted (facts: aborted, KAFKA_TRANSACTION_ABORTED), and the producer
 *   is discarded and a new one initialised (metric producerRecreated): kafkajs would otherwise reuse the
 *   failed batch's sequence numbers and the broker refuse them (OUT_OF_ORDER_SEQUENCE_NUMBER);
 * - the commit (EndTxn) fails: the coordinator may or may not have committed (facts: unknown). The producer
 *   is rebuilt, which settles the transaction (its initialisation waits for pending markers), and the
 *   offsets of the pages' locations are read, only from their partitions of the offsets topic, once every
 *   transaction open there has ended (KafkaOffsetStore `awaitOpenTransactions`: a read stopped short by one, a
 *   neighbour's or a hanging one of ours, would show the committed offset and pass for an abort): the rule
 *   says stored, rejected or superseded per page, or 'read-again' (a stale read, never adopted), and the
 *   sink reads again after a backoff until it decides (see settle), for about a minute and a half at most:
 *   then it stops (FatalError KAFKA_OFFSETS_UNSETTLED, `onFatal`) and a restart reads the store afresh.
 *   When the read would not store every page, the sink also asks whether the transaction's records outside
 *   the offsets topic are visible (`published`: its first record on each partition, at the offsets the produce
 *   answers gave). All visible, it committed; some, it committed and an operator aborted part of it since (a
 *   hanging transaction); none, it aborted. What Kafka lost of a committed page (its offset record, its records
 *   on the aborted partitions) is written again before the page is stored ('rewrite-offset', 'republish-lost',
 *   see writeAgain);
 * - fenced (INVALID_PRODUCER_EPOCH; kafkajs 2.2.4 has no PRODUCER_FENCED): either the coordinator aborted
 *   our transaction for its age, or another instance with the same connector name initialised the id
 *   (facts: aborted, KAFKA_PRODUCER_FENCED, when the rule below lets the producer be built again);
 * - authorization or configuration errors (TRANSACTIONAL_ID_AUTHORIZATION_FAILED, ...): fatal
 *   (KAFKA_NOT_PERMITTED), `onFatal` is called;
 * - a programmer error (TypeError, RangeError, an illegal producer transition): fatal (SINK_PROGRAMMER_ERROR),
 *   `onFatal` is called and the process exits, so a supervisor restarts it (distributed mode: the group
 *   moves its partitions). Retrying a bug would only repeat it, and standing still would stop every location
 *   of the group for good.
 *
 * Never initialising an id this sink may have lost: every producer initialisation runs InitProducerId, which
 * fences whoever holds the id. A sink that was paused or cut off (while writing, or during its start, before
 * its first initialisation) cannot know whether a newer writer took the id meanwhile, and the transaction's age
 * cannot tell it either (a pause outlasts any timeout). So every initialisation passes `beforeBuild` first:
 * - single mode: `instances.newest()` must show, from Kafka's own membership of `<name>-instances`, that no
 *   instance started after this one is running (every instance is a member, its start stamp in its metadata:
 *   kafka/group/start-stamp.ts). If one is, this sink stands down for good: FatalError
 *   KAFKA_FENCED_BY_ANOTHER_INSTANCE, `onFatal` (the runtime then stands by, not ready, at start as when
 *   running), and every later commitPage rejects with it. The newest instance wins and is never fenced back;
 *   an older one that stands by does not stop the newest from initialising again after a failure of its own.
 *   When the membership cannot be read, nothing is built now (retriable: the start waits, a running sink asks
 *   again at its next transaction). A FencingBudget still bounds rebuilds after fencings. Without `instances`,
 *   the first initialisation goes ahead and any later one stands down.
 * - distributed mode (option `onTakenOver`): the first initialisation only (the group gave this instance the
 *   partition). Any loss of the producer (a fencing, an unknown commit
 *   outcome, a failed send) ends the sink like a fencing: no producer is built again, the pages reject with
 *   the RetriableError KAFKA_PARTITION_TAKEN_OVER (their locations are not stopped), and `onTakenOver` is
 *   called: the instance drops that partition, and takes it again only through the group (a fresh sink
 *   whose initialisation fences no newer owner, since the group gave the partition to this instance).
 *
 * Pages of an older producer: a page carries the sink generation its starting offset was read under
 * (PageCommit.generation). A page queued before a re-initialisation is not written under the new epoch
 * (facts: aborted, KAFKA_PAGE_FROM_OLD_PRODUCER): its location's stored offset is read, and the rule
 * answers rejected (nothing moved: the location commits it again under the current generation) or
 * superseded (another writer stored a newer offset: the location continues from it).
 * The fatal failures above, and a sink closing or taken over, reject the pages instead (RecordSink).
 * The producer's build, discard, standing down and close are the shared ProducerLifecycle's
 * (producer-lifecycle.ts); this file is how a page is written.
 */
import { Partitioners, type CompressionTypes, type ProducerConfig, type Transaction } from 'kafkajs';
import { ConnectorError, FatalError, RetriableError } from '../../errors/index.js';
import type { Logger } from '../../logging/logger.js';
import type { ConnectorMetrics } from '../../metrics/metrics.js';
import { commitOutcomes, publishedFrom, type Published, type Verdict } from '../../sync/commit-outcome.js';
import type { LocationOffset } from '../../sync/model.js';
import type { CommitOutcome, PageCommit, RecordSink } from '../../sync/ports.js';
import {
  describeKafkaError,
  fatalKafkaErrorType,
  isFencedError,
  isProgrammerError,
  kafkaErrorTypes,
} from '../client/kafka-errors.js';
import {
  chunkTopicMessages,
  countDiverted,
  offsetOnly,
  topicMessages,
  type CallEncoder,
  type PageMessages,
  type SinkTopics,
} from '../records/page-messages.js';
import {
  lostPart,
  lostTopicCounts,
  Witnesses,
  type PublishedCheck,
  type RecordPosition,
} from './commit-witnesses.js';
import type { Initialisation } from '../group/start-stamp.js';
import { FencingBudget, type FencingBudgetOptions } from './fencing-budget.js';
import { groupSize, PageQueue, settlePages, type PendingPage } from './page-queue.js';
import { ProducerLifecycle } from './producer-lifecycle.js';
import { backoffDelayMs, type Backoff } from '../../time/backoff.js';
import { systemClock, type Clock } from '../../time/clock.js';

/** The part of a kafkajs transaction the sink uses. */
export type SinkTransaction = Pick<Transaction, 'sendBatch' | 'commit' | 'abort'>;

/** The part of a kafkajs producer the sink uses; kafkajs' Producer satisfies it. */
export interface TransactionalProducer {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  transaction(): Promise<SinkTransaction>;
}

export interface TransactionalSinkOptions {
  /** Builds producers: a kafkajs `Kafka` client (a seam for unit tests). */
  kafka: { producer(config: ProducerConfig): TransactionalProducer };
  encoder: CallEncoder;
  topics: SinkTopics;
  connectorName: string;
  /** Derived from the connector name (see transactionalIdFor), so a second instance fences the first. */
  transactionalId: string;
  transactionTimeoutMs: number;
  maxPagesPerTransaction: number;
  /** A transaction takes further pages only while its messages stay under this many bytes. */
  maxBytesPerTransaction: number;
  /** Codec of the record batches (kafka.compression); default none. */
  compression?: CompressionTypes;
  fencing: FencingBudgetOptions;
  /** Reads the stored offsets of the pages' locations, to learn what a failed commit left (see settle). */
  offsetStore: LocationOffsetReader;
  /**
   * Tells whether a record of a commit of unknown outcome is visible (see settle); unset, never asked, and
   * the offsets read back alone decide.
   */
  published?: PublishedCheck;
  /**
   * A topic's partition count, to tell which of a page's records went to a partition whose part of a committed
   * transaction an operator aborted ('republish-lost'); unset or failing, the page's records all go again.
   */
  partitionCount?: (topic: string) => Promise<number>;
  metrics: ConnectorMetrics;
  logger: Logger;
  /** Called once when the sink gives up for good; the process should shut down. */
  onFatal?: (error: FatalError) => void;
  /**
   * Single mode: whether this instance is the newest one running (see the module comment). Unset in single
   * mode: the sink never re-initialises its producer; after any loss it stands down.
   */
  instances?: InstanceCheck;
  /** Distributed mode: fencing means the partition was taken over; called once (see the module comment). */
  onTakenOver?: () => void;
  /** Where transaction ages and record timestamps are read (default: the system clock). */
  clock?: Clock;
}

/** The transactional id of a connector: one per connector name, so two instances of one name fence each other. */
export function transactionalIdFor(connectorName: string): string {
  return `calls-connector.${connectorName}`;
}

/** Reads the offsets of some locations only (KafkaOffsetStore: just the partitions their keys hash to). */
export interface LocationOffsetReader {
  /** The stored offset of each of `locationUids` that has one, read to the end (read_committed). */
  loadLocations(locationUids: readonly string[]): Promise<Map<string, LocationOffset>>;
}

/** Kafka's word on which instances of a connector run (kafka/group/instance-presence.ts implements it). */
export interface InstanceCheck {
  /**
   * Resolves true when Kafka's group membership shows that no instance of this connector started after this one
   * is running, false when one is; rejects when it cannot tell now (Kafka unavailable, the group rebalancing too
   * long).
   */
  newest(initialisation: Initialisation): Promise<boolean>;
}

/** Between read-backs of an unsettled write: 0.5 s doubling to 30 s, no jitter (one sink, one reader). */
const SETTLE_READ_BACKOFF: Readonly<Backoff> = {
  initialDelayMs: 500,
  multiplier: 2,
  maxDelayMs: 30_000,
  jitter: 0,
};

type Stage = 'begin' | 'send' | 'commit';

/**
 * Reads of the offsets topic that may lag (see settle) before the sink gives up on them: with the backoff
 * (0.5 s doubling, at most 30 s) about a minute and a half.
 */
const MAX_UNSETTLED_READS = 8;

/**
 * How a failed transaction ends for its pages: rejected (the sink writes nothing more: fatal, taken over,
 * closing), or facts for the rule (a write aborted, or of unknown outcome).
 */
type Failure =
  | { reject: Error }
  | { write: 'aborted' | 'unknown'; reason: RetriableError; witnesses?: readonly RecordPosition[] };

/** Settles the pages of a write once decided; `stored`: the write turned out committed. */
type Settlement = (() => void) & { stored: boolean };

class TransactionFailure extends Error {
  constructor(
    readonly stage: Stage,
    readonly original: unknown,
    /** A commit's: where its first call or dead letter on each partition landed (see settle). */
    readonly witnesses: readonly RecordPosition[] = [],
  ) {
    super(describeKafkaError(original), { cause: original });
  }
}

export type { PublishedCheck, RecordPosition } from './commit-witnesses.js';

export class TransactionalRecordSink implements RecordSink {
  private readonly producers: ProducerLifecycle<TransactionalProducer>;
  private readonly queue: PageQueue;
  /** Distributed mode: set once the partition was taken over (see the module comment). */
  private takenOverError: RetriableError | undefined;
  private readonly fencing: FencingBudget;
  /** Locations whose last group failed: their pages are committed alone until one commits (nextGroupSize). */
  private readonly suspects = new Set<string>();
  /** When the transaction in flight began (epoch ms), reported with a fencing. */
  private transactionStartedAt = 0;
  private readonly clock: Clock;
  private readonly log: Logger;

  constructor(private readonly options: TransactionalSinkOptions) {
    if (!Number.isInteger(options.maxPagesPerTransaction) || options.maxPagesPerTransaction < 1) {
      throw new RangeError('maxPagesPerTransaction must be a positive integer');
    }
    if (options.transactionalId.length === 0) throw new RangeError('transactionalId must not be empty');
    this.fencing = new FencingBudget(options.fencing);
    this.clock = options.clock ?? systemClock;
    this.queue = new PageQueue({
      encoder: options.encoder,
      connectorName: options.connectorName,
      drain: (queue) => this.drain(queue),
    });
    this.log = options.logger.child({
      component: 'transactional-sink',
      transactionalId: options.transactionalId,
    });
    this.producers = new ProducerLifecycle({
      build: () =>
        options.kafka.producer({
          transactionalId: options.transactionalId,
          idempotent: true,
          maxInFlightRequests: 1,
          transactionTimeout: options.transactionTimeoutMs,
          allowAutoTopicCreation: false,
          // murmur2 over the key bytes, as the Java client: Java and Streams consumers co-partition with us.
          createPartitioner: Partitioners.DefaultPartitioner,
        }),
      prepare: async (producer) => {
        await producer.connect();
        // kafkajs runs InitProducerId on the first transaction(); nothing is added, so abort() sends no EndTxn.
        const init = await producer.transaction();
        await init.abort();
      },
      beforeBuild: (rebuild) => this.mayInitialise(rebuild),
      metrics: options.metrics,
      logger: this.log,
      clock: this.clock,
    });
  }

  /**
   * The rule of the module comment, run before every producer initialisation (`rebuild`: one after the first
   * made a producer ready): resolves when this sink may initialise its transactional id; otherwise stands down
   * (throwing that error), or throws a retriable error when it cannot tell yet.
   */
  private async mayInitialise(rebuild: boolean): Promise<void> {
    if (this.options.onTakenOver !== undefined) {
      if (!rebuild) return;
      throw this.takenOver(
        new Error('the producer was lost; the partition is taken again only through the group'),
      );
    }
    const { instances } = this.options;
    if (instances === undefined) {
      if (!rebuild) return;
      throw this.fencedByAnotherInstance(undefined, 'no instances group to ask');
    }
    let newest: boolean;
    try {
      newest = await instances.newest(rebuild ? 'again' : 'first');
    } catch (error) {
      throw new RetriableError(
        'KAFKA_INSTANCES_UNKNOWN',
        `cannot tell whether a newer instance of connector.name "${this.options.connectorName}" runs, so the producer is not initialised yet: ${describeKafkaError(error)}`,
        { cause: error },
      );
    }
    if (!newest)
      throw this.fencedByAnotherInstance(
        undefined,
        'an instance started after this one is a member of the instances group',
      );
  }

  private fencedByAnotherInstance(cause: unknown, why: string): FatalError {
    return this.fail(
      new FatalError(
        'KAFKA_FENCED_BY_ANOTHER_INSTANCE',
        `another instance with connector.name "${this.options.connectorName}" (transactional id ${this.options.transactionalId}) ` +
          `may hold the transactional id (${why}): the newest instance writes, this one stands by and writes nothing more. ` +
          `Stop this instance (a rolling restart does); to run both, give them different connector names.`,
        { cause, details: { transactionOpenMs: this.clock.now() - this.transactionStartedAt } },
      ),
    );
  }

  private get fatal(): ConnectorError | undefined {
    return this.takenOverError ?? this.producers.fatal;
  }

  /**
   * Creates the producer and initialises its transactions. This fences any older producer with the same
   * transactionalId and aborts a transaction such a producer left open, which would otherwise hold back
   * what read_committed readers of the offsets topic can see. Call it before loading offsets.
   */
  async start(): Promise<void> {
    try {
      await this.producers.acquire();
    } catch (error) {
      throw this.startError(error);
    }
  }

  generation(): number {
    return this.producers.generation;
  }

  commitPage(commit: PageCommit): Promise<CommitOutcome> {
    if (this.fatal !== undefined) return Promise.reject(this.fatal);
    if (this.producers.isClosing)
      return Promise.reject(
        new RetriableError('KAFKA_SINK_CLOSED', 'the Kafka sink is closing; the page was not committed'),
      );
    return this.queue.offer(commit, new Date(this.clock.now()));
  }

  /**
   * Commits what is queued, then disconnects. Pages offered after close() starts are rejected.
   * With `timeoutMs`, gives up waiting after that long (shutdown must be bounded): pages still queued
   * are rejected (KAFKA_SINK_CLOSED) and the producer is disconnected; a transaction still in flight is
   * then aborted by the coordinator after kafka.transactionTimeoutMs, or at once when the next instance
   * initialises its producer. Nothing half-written ever becomes visible.
   */
  async close(timeoutMs?: number): Promise<void> {
    if (!(await this.producers.beginClose(this.queue.drained(), timeoutMs))) {
      const error = new RetriableError(
        'KAFKA_SINK_CLOSED',
        `the Kafka sink closed after ${timeoutMs} ms before this page was committed`,
      );
      for (const page of this.queue.pages.splice(0)) page.reject(error);
      this.log.warn({ timeoutMs }, 'closing the sink timed out; the open transaction is left to be aborted');
    }
    await this.producers.close();
  }

  private async drain(queue: PendingPage[]): Promise<void> {
    while (queue.length > 0 && this.fatal === undefined) {
      const taken = queue.splice(0, this.nextGroupSize(queue));
      let admitted: { group: PendingPage[]; refused: PendingPage[] };
      try {
        admitted = await this.admit(taken);
      } catch (error) {
        // Nothing was sent. The rebuild rule's own answer (stood down, or cannot tell yet) is final for this
        // group: asking again at once would only wait again.
        const failure =
          error instanceof ConnectorError
            ? this.failureOf(error)
            : await this.recover(new TransactionFailure('begin', error));
        const settled = await this.settle(taken, failure);
        this.options.metrics.transactions.inc({ result: 'abort' });
        settled();
        continue;
      }
      const { group, refused } = admitted;
      if (refused.length > 0) {
        const reason = fromOldProducer(refused, this.producers.generation);
        const settled = await this.settle(refused, { write: 'aborted', reason }, true);
        this.options.metrics.transactions.inc({ result: 'abort' }, refused.length);
        settled();
      }
      if (group.length === 0) continue;
      const pages = group.map((p) => p.messages);
      let settled: Settlement = Object.assign(
        () =>
          settlePages(
            group,
            commitOutcomes(
              group.map((p) => p.at),
              { write: 'committed' },
            ),
          ),
        { stored: true },
      );
      try {
        await this.commitGroup(pages);
      } catch (error) {
        const failure = await this.recover(error);
        settled = await this.settle(group, failure);
        if (!settled.stored) {
          this.options.metrics.transactions.inc({ result: 'abort' });
          // Until each of them commits, these locations' pages go alone: a page that can never commit
          // (say, an offset record over the broker's limit) then aborts only its own transactions.
          if (group.length > 1) for (const page of group) this.suspects.add(page.messages.locationUid);
          settled();
          continue;
        }
      }
      this.options.metrics.transactions.inc({ result: 'commit' });
      countDiverted(this.options.metrics, pages);
      for (const page of group) this.suspects.delete(page.messages.locationUid);
      settled();
    }
    if (this.fatal !== undefined) for (const page of queue.splice(0)) page.reject(this.fatal);
  }

  /**
   * Decides the pages of a failed write by the rule, reading their locations' offsets when the facts do
   * not decide (or at once, with `readFirst`) and again after a backoff while a read does not decide
   * (a stale read). Resolves to what settles the pages' promises (called by the caller once its metrics
   * are counted), `stored` when the write turned out committed.
   */
  private async settle(
    pages: readonly PendingPage[],
    failure: Failure,
    readFirst = false,
  ): Promise<Settlement> {
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
    for (let attempt = 0; verdicts.includes('read-again'); attempt += 1) {
      // After a timed-out close, reading would build a producer nobody disconnects: leave the outcome to
      // the next start (its producer initialisation settles the transaction, its read is the truth).
      if (this.producers.state === 'closed' || (this.producers.isClosing && attempt > 0)) {
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
        await this.producers.acquire();
        const generation = this.producers.generation;
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
          this.log.info(
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
          this.log.warn(
            { attempt, undecided: undecided.length },
            'the offsets read back lag what this sink committed; reading again',
          );
      } catch (error) {
        const fatal = this.fatal ?? this.fatalOf(error);
        if (fatal !== undefined) return rejectAll(fatal);
        this.log.warn(
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
        await this.clock
          .sleep(backoffDelayMs(SETTLE_READ_BACKOFF, attempt + 1, 0), this.producers.closedSignal)
          .catch(() => undefined);
    }
    const decided = verdicts;
    // Asked once for the write, not per page: each count is a metadata request.
    const counts = decided.includes('republish-lost')
      ? await lostTopicCounts(lost, this.options.partitionCount)
      : new Map<string, number | undefined>();
    const again = new Map<PendingPage, PageMessages>();
    for (const [i, page] of pages.entries()) {
      if (decided[i] === 'rewrite-offset') again.set(page, offsetOnly(page.messages));
      if (decided[i] === 'republish-lost')
        again.set(page, lostPart(page.messages, lost, this.options.topics, counts));
    }
    return Object.assign(
      () => {
        settlePages(
          pages.filter((page) => !again.has(page)),
          decided.filter((_, i) => !again.has(pages[i]!)),
        );
        for (const [page, messages] of again) this.writeAgain(page, messages);
      },
      // Some page shows its offset stored, or the write's records are visible: the transaction committed.
      { stored: again.size > 0 || decided.some(isStored) },
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
      this.log.warn(
        { err: describeKafkaError(error) },
        'cannot read the calls of a commit of unknown outcome; its offsets read back alone decide it',
      );
      return { published: undefined, lost: [] };
    }
  }

  /**
   * A page whose transaction committed while Kafka lost part of it since (an operator aborted a hanging part,
   * see sync/commit-outcome.ts): `messages`, its offset record alone ('rewrite-offset') or with its records on
   * the aborted partitions ('republish-lost'), go again at the head of the queue, and the page settles with that
   * write. A rejected write is tried again after a backoff (none of it is visible, so trying again is always
   * safe); the page is rejected only when the sink writes nothing more.
   */
  private writeAgain(page: PendingPage, messages: PageMessages, attempt = 1): void {
    this.log.warn(
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
        this.clock.sleep(backoffDelayMs(SETTLE_READ_BACKOFF, attempt, 0), this.producers.closedSignal).then(
          () =>
            this.fatal === undefined ? this.writeAgain(page, messages, attempt + 1) : page.reject(this.fatal),
          () => page.reject(closedBeforeRewrite(outcome.reason)),
        );
      },
      reject: page.reject,
    };
    this.queue.requeue(copy);
  }

  /**
   * The offsets topic kept answering, MAX_UNSETTLED_READS times since the producer initialised, offsets the
   * rule cannot take (older than committed, missing, or contradicting each other). Never adopted; rather
   * than hold every location's pages behind it for ever, the process stops (onFatal) and a restart reads
   * the stored offsets afresh.
   */
  private unsettled(pages: readonly PendingPage[]): FatalError {
    const locations = [...new Set(pages.map((p) => p.messages.locationUid))];
    return this.fail(
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

  /** A ConnectorError met before anything was sent: the sink's own answer, as a failure of the group. */
  private failureOf(error: ConnectorError): Failure {
    if (this.fatal !== undefined) return { reject: this.fatal };
    // Cannot tell yet whether another instance runs: nothing was built, nothing written.
    if (error instanceof RetriableError && error.code !== 'KAFKA_SINK_CLOSED')
      return { write: 'aborted', reason: error };
    return { reject: error };
  }

  /** A FatalError for an error met while settling, or undefined when it is worth trying again. */
  private fatalOf(error: unknown): FatalError | undefined {
    if (error instanceof FatalError) return this.fail(error);
    const fatalType = fatalKafkaErrorType(error);
    if (fatalType === undefined) return undefined;
    return this.fail(
      new FatalError(
        'KAFKA_NOT_PERMITTED',
        `Kafka refused to initialise the producer or read the offsets (${fatalType}): check the ACLs`,
        { cause: error },
      ),
    );
  }

  /**
   * How many pages from the head of the queue the next transaction takes (groupSize), except that a page
   * of a suspect location (one whose group failed) goes alone, and a group stops before one.
   */
  private nextGroupSize(queue: readonly PendingPage[]): number {
    const size = groupSize(queue, this.options.maxBytesPerTransaction, this.options.maxPagesPerTransaction);
    if (this.suspects.size === 0) return size;
    const first = queue.findIndex((p, i) => i < size && this.suspects.has(p.messages.locationUid));
    if (first === -1) return size;
    return first === 0 ? 1 : first;
  }

  /**
   * Makes sure a producer is ready, then separates the pages prepared under an older one (see the module
   * comment) from the rest, in order.
   */
  private async admit(pages: PendingPage[]): Promise<{ group: PendingPage[]; refused: PendingPage[] }> {
    await this.producers.acquire();
    const current = this.producers.generation;
    const group: PendingPage[] = [];
    const refused: PendingPage[] = [];
    for (const page of pages)
      (page.generation === undefined || page.generation === current ? group : refused).push(page);
    return { group, refused };
  }

  private async commitGroup(pages: readonly PageMessages[]): Promise<void> {
    let transaction: SinkTransaction;
    try {
      const producer = await this.producers.acquire();
      this.transactionStartedAt = this.clock.now();
      transaction = await producer.transaction();
    } catch (error) {
      throw new TransactionFailure('begin', error);
    }
    const witnesses = new Witnesses(this.options.topics.offsets);
    try {
      // In parts of at most maxBytesPerTransaction (kept under max.message.bytes): one page can be larger.
      const parts = chunkTopicMessages(
        topicMessages(pages, this.options.topics),
        this.options.maxBytesPerTransaction,
      );
      for (const part of parts) {
        const answers = await transaction.sendBatch({
          topicMessages: part,
          acks: -1,
          compression: this.options.compression,
        });
        witnesses.add(answers);
      }
    } catch (error) {
      // Best effort: the rebuild that follows aborts it anyway, this just releases it sooner.
      await this.tryAbort(transaction);
      throw new TransactionFailure('send', error);
    }
    try {
      const commitTimer = this.options.metrics.transactionCommitDuration.startTimer();
      await transaction.commit();
      commitTimer();
    } catch (error) {
      throw new TransactionFailure('commit', error, witnesses.positions());
    }
  }

  private async tryAbort(transaction: SinkTransaction): Promise<void> {
    try {
      await transaction.abort();
    } catch (error) {
      this.log.debug({ err: describeKafkaError(error) }, 'aborting a failed transaction failed too');
    }
  }

  /**
   * Names what a failed transaction means and repairs the producer: the facts for the rule, or the
   * error that rejects the pages when the sink writes nothing more.
   */
  private async recover(error: unknown): Promise<Failure> {
    const failure = error instanceof TransactionFailure ? error : new TransactionFailure('begin', error);
    const original = failure.original;

    if (isProgrammerError(original)) {
      // A bug, not Kafka's answer: retrying would repeat it, and the transaction's state is unknown.
      return {
        reject: this.fail(
          new FatalError(
            'SINK_PROGRAMMER_ERROR',
            `the Kafka sink hit a programmer error; the process stops so that a supervisor restarts it: ${failure.message}`,
            { cause: original },
          ),
        ),
      };
    }

    const fatalType = fatalKafkaErrorType(original);
    if (fatalType !== undefined) {
      return {
        reject: this.fail(
          new FatalError(
            'KAFKA_NOT_PERMITTED',
            `Kafka refused the transaction (${fatalType}): check the ACLs and kafka.* settings. ${failure.message}`,
            { cause: original },
          ),
        ),
      };
    }

    // Distributed mode: any loss of the producer hands the partition back (see the module comment).
    if (this.options.onTakenOver !== undefined) return { reject: this.takenOver(original) };
    if (this.fatal !== undefined) return { reject: this.fatal };
    if (isFencedError(original)) {
      if (!this.fencing.allowRebuild(this.clock.now()))
        return {
          reject: this.fencedByAnotherInstance(original, 'fenced too often within kafka.fencedWindowMs'),
        };
      // Our own transaction timed out, or a newer instance took the id: mayReinitialise tells which.
      await this.rebuildProducer('INVALID_PRODUCER_EPOCH');
      if (this.fatal !== undefined) return { reject: this.fatal };
      return {
        write: 'aborted',
        reason: new RetriableError(
          'KAFKA_PRODUCER_FENCED',
          `the producer was fenced; it is initialised again only while Kafka shows no other instance running (the transaction outlived kafka.transactionTimeoutMs); nothing of the transaction is visible: ${failure.message}`,
          { cause: original },
        ),
      };
    }

    if (failure.stage === 'commit') {
      // EndTxn failed (timeout, coordinator moved...): settle() rebuilds the producer, which completes or
      // aborts the transaction, and reads what it left.
      const code = kafkaErrorTypes(original)[0] ?? 'END_TXN_FAILED';
      this.log.warn(
        { code },
        'committing failed with an unknown outcome; rebuilding the producer to settle it',
      );
      await this.producers.discard(code);
      return {
        write: 'unknown',
        witnesses: failure.witnesses,
        reason: new RetriableError(
          'KAFKA_COMMIT_OUTCOME_UNKNOWN',
          `committing the transaction failed, and the offsets read back after rebuilding the producer show it did not take effect (or cannot tell): ${failure.message}`,
          { cause: original },
        ),
      };
    }

    // Even after a clean abort the producer is rebuilt: kafkajs keeps the sequence numbers of the failed
    // batch, and the broker then refuses the next transaction with OUT_OF_ORDER_SEQUENCE_NUMBER (the
    // Java client bumps the epoch instead, KIP-360; kafkajs cannot).
    await this.rebuildProducer(
      kafkaErrorTypes(original)[0] ?? (failure.stage === 'begin' ? 'BEGIN_FAILED' : 'SEND_FAILED'),
    );
    if (this.fatal !== undefined) return { reject: this.fatal };
    return {
      write: 'aborted',
      reason: new RetriableError(
        'KAFKA_TRANSACTION_ABORTED',
        `the transaction was not committed; nothing of it is visible: ${failure.message}`,
        { cause: original },
      ),
    };
  }

  private takenOver(cause: unknown): ConnectorError {
    if (this.fatal === undefined) {
      const message =
        `another instance took over transactional id ${this.options.transactionalId}: its partition has a new owner, ` +
        `which writes its locations from now on; nothing of this transaction is visible`;
      this.takenOverError = new RetriableError('KAFKA_PARTITION_TAKEN_OVER', message, {
        cause,
      });
      // The lifecycle stands down for good (no producer is built again); the pages see the retriable error.
      this.producers.fail(new FatalError('KAFKA_PARTITION_TAKEN_OVER', message, { cause }));
      this.log.warn(
        { code: 'KAFKA_PARTITION_TAKEN_OVER' },
        'fenced: the partition was taken over; writing nothing more',
      );
      this.options.onTakenOver?.();
    }
    return this.fatal ?? this.takenOverError!;
  }

  private fail(error: FatalError): FatalError {
    const first = this.producers.fail(error);
    if (first === error) {
      this.log.error({ code: error.code }, error.message);
      this.options.onFatal?.(error);
    }
    return first;
  }

  /**
   * Replaces the producer. Initialising the new one settles whatever the old one left (aborts an open
   * transaction, completes a commit the coordinator accepted), so offsets read afterwards are the truth.
   * When that fails too (Kafka down), the next transaction tries again.
   */
  private async rebuildProducer(code: string): Promise<void> {
    await this.producers.discard(code);
    if (this.producers.isClosing) return; // a page still queued during a graceful close builds it on demand
    try {
      await this.producers.acquire();
    } catch (error) {
      this.log.warn(
        { err: describeKafkaError(error) },
        'the new producer could not be initialised yet; the next transaction retries',
      );
    }
  }

  private startError(error: unknown): Error {
    if (error instanceof ConnectorError) return error; // the sink's own (a newer instance runs; cannot tell yet)
    const fatalType = fatalKafkaErrorType(error);
    if (fatalType !== undefined) {
      return new FatalError(
        'KAFKA_NOT_PERMITTED',
        `Kafka refused to initialise the transactional producer (${fatalType}): check the ACLs for transactional id ${this.options.transactionalId}`,
        {
          cause: error,
        },
      );
    }
    return new RetriableError(
      'KAFKA_UNAVAILABLE',
      `cannot initialise the transactional producer: ${describeKafkaError(error)}`,
      { cause: error },
    );
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

/** Why pages prepared under an older producer generation were not written. */
function fromOldProducer(pages: readonly PendingPage[], generation: number): RetriableError {
  return new RetriableError(
    'KAFKA_PAGE_FROM_OLD_PRODUCER',
    `the page was prepared under an older producer generation, and the producer was initialised again since (generation ${generation}): nothing of it was written; its location's stored offset was read`,
    { details: { pageGenerations: [...new Set(pages.map((p) => p.generation))], generation } },
  );
}
