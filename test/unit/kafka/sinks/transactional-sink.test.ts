/**
 * The transactional sink's own logic with scripted producers: group commit, the group size cap, a
 * commit whose outcome is unknown, fatal refusals and bounded close. (The broker-facing behaviour is in
 * test/integration/kafka/sinks.)
 */
import type { ProducerBatch, RecordMetadata } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { ConnectorError, FatalError, RetriableError } from '../../../../src/errors/index.js';
import { pageMessages, type CallEncoder } from '../../../../src/kafka/records/page-messages.js';
import type { PublishedCheck, RecordPosition } from '../../../../src/kafka/sinks/commit-witnesses.js';
import type { InstanceCheck } from '../../../../src/kafka/sinks/init-rule.js';
import { TransactionalRecordSink } from '../../../../src/kafka/sinks/transactional-sink.js';
import type {
  SinkTransaction,
  TransactionalProducer,
} from '../../../../src/kafka/sinks/transactional-producer.js';
import { silentLogger } from '../../../../src/logging/logger.js';
import { ConnectorMetrics } from '../../../../src/metrics/metrics.js';
import type { LocationOffset } from '../../../../src/sync/model.js';
import type { CommitOutcome, PageCommit } from '../../../../src/sync/ports.js';
import { counterValue } from '../../../support/counters.js';
import { sampleCall } from '../../../support/calls.js';
import { rejectionOf } from '../../../support/rejection.js';
import type { Clock } from '../../../../src/time/clock.js';
import { ManualClock, clockReading } from '../../../support/clock.js';
import { protocolError } from '../../../support/kafka-errors.js';
import { deferred } from '../../../support/async.js';

const topics = { calls: 'calls', offsets: 'offsets', deadLetters: 'dlq' };
const encoder: CallEncoder = { encodeKey: (c) => c.uid, encodeValue: (c) => Buffer.from(c.uid) };

/**
 * The instances group's answers when a newer instance starts after this sink's first initialisation: this one
 * is the newest at its start, and no longer afterwards.
 */
function newerInstanceAfterStart(): () => Promise<boolean> {
  let asked = 0;
  return async () => asked++ === 0;
}

/** What the scripted producers do; every hook may be changed between steps of a test. */
interface Script {
  /** Awaited by every sendBatch before it records the batch. */
  beforeSend: (batch: ProducerBatch) => Promise<void>;
  commit: () => Promise<void>;
  connect: () => Promise<void>;
}

class ScriptedKafka {
  readonly script: Script = {
    beforeSend: async () => undefined,
    commit: async () => undefined,
    connect: async () => undefined,
  };
  producersBuilt = 0;
  /** Batches of committed transactions, in commit order. */
  readonly committed: ProducerBatch[][] = [];
  /** Every batch sent, committed or not. */
  readonly sent: ProducerBatch[] = [];

  producer(): TransactionalProducer {
    this.producersBuilt += 1;
    return {
      connect: () => this.script.connect(),
      disconnect: async () => undefined,
      transaction: async (): Promise<SinkTransaction> => {
        const batches: ProducerBatch[] = [];
        return {
          sendBatch: async (batch: ProducerBatch): Promise<RecordMetadata[]> => {
            await this.script.beforeSend(batch);
            batches.push(batch);
            this.sent.push(batch);
            // Where the records landed, as a broker answers: partition 0, after those sent before.
            return (batch.topicMessages ?? []).map((t) => ({
              topicName: t.topic,
              partition: 0,
              errorCode: 0,
              baseOffset: String(this.sent.length * 100),
            }));
          },
          commit: async () => {
            await this.script.commit();
            if (batches.length > 0) this.committed.push(batches);
          },
          abort: async () => undefined,
        };
      },
    };
  }
}

function page(location: string, cursor: string): PageCommit {
  return {
    locationUid: location,
    calls: [sampleCall({ uid: `${location}-${cursor}`, locationUid: location })],
    deadLetters: [],
    offset: { since: null, cursor, watermark: '2024-05-01T10:00:00Z', boundary: [] },
  };
}

function sinkWith(
  kafka: ScriptedKafka,
  options: {
    maxPagesPerTransaction?: number;
    maxBytesPerTransaction?: number;
    stored?: () => Map<string, LocationOffset>;
    onFatal?: (e: FatalError) => void;
    onTakenOver?: () => void;
    /** What the instances group says (default: no instance started after this one runs). */
    newest?: InstanceCheck['newest'];
    clock?: Clock;
    /** Whether a record of a write is visible (PublishedCheck); unset, the sink has no check. */
    published?: PublishedCheck['visible'];
    partitionCount?: (topic: string) => Promise<number>;
  } = {},
) {
  const metrics = new ConnectorMetrics();
  /** The location uids of each read of the offsets topic. */
  const reads: string[][] = [];
  const sink = new TransactionalRecordSink({
    kafka,
    encoder,
    topics,
    connectorName: 'conn',
    transactionalId: 'calls-connector.conn',
    transactionTimeoutMs: 60_000,
    maxPagesPerTransaction: options.maxPagesPerTransaction ?? 50,
    maxBytesPerTransaction: options.maxBytesPerTransaction ?? 1_000_000,
    fencing: { limit: 3, windowMs: 60_000 },
    offsetStore: {
      loadLocations: async (uids) => {
        reads.push([...uids]);
        const stored = options.stored?.() ?? new Map<string, LocationOffset>();
        return new Map([...stored].filter(([uid]) => uids.includes(uid)));
      },
    },
    metrics,
    logger: silentLogger(),
    ...(options.onFatal === undefined ? {} : { onFatal: options.onFatal }),
    ...(options.onTakenOver === undefined ? {} : { onTakenOver: options.onTakenOver }),
    instances: { newest: options.newest ?? (async () => true) },
    ...(options.published === undefined ? {} : { published: { visible: options.published } }),
    ...(options.partitionCount === undefined ? {} : { partitionCount: options.partitionCount }),
    ...(options.clock === undefined ? {} : { clock: options.clock }),
  });
  return { sink, metrics, reads };
}

/**
 * 'resolved' for a page stored, 'superseded', or the error: a 'rejected' outcome's reason (nothing
 * visible, commit again), or the rejection of the promise (the sink writes nothing more).
 */
async function outcome(promise: Promise<CommitOutcome>): Promise<ConnectorError | 'resolved' | 'superseded'> {
  return promise.then(
    (result) => {
      if (result.kind === 'rejected') return result.reason;
      return result.kind === 'stored' ? ('resolved' as const) : ('superseded' as const);
    },
    (e: unknown) => {
      expect(e).toBeInstanceOf(ConnectorError);
      return e as ConnectorError;
    },
  );
}

function pageMessagesBytes(commit: PageCommit): number {
  return pageMessages(commit, encoder, 'conn', new Date()).bytes;
}

/** Offsets-topic record counts of each committed transaction (one per page). */
function pagesPerTransaction(kafka: ScriptedKafka): number[] {
  return kafka.committed.map((batches) =>
    batches
      .flatMap((b) => b.topicMessages ?? [])
      .filter((t) => t.topic === 'offsets')
      .reduce((n, t) => n + t.messages.length, 0),
  );
}

describe('TransactionalRecordSink (scripted producer)', () => {
  it('puts pages offered during an in-flight transaction into the next one and resolves each with its transaction', async () => {
    const kafka = new ScriptedKafka();
    const { sink, metrics } = sinkWith(kafka);
    await sink.start();
    const gate = deferred();
    kafka.script.beforeSend = () => gate.promise;

    const first = sink.commitPage(page('a', '1'));
    const queued = [
      sink.commitPage(page('b', '1')),
      sink.commitPage(page('c', '1')),
      sink.commitPage(page('d', '1')),
    ];
    gate.resolve();
    await Promise.all([first, ...queued]);

    expect(pagesPerTransaction(kafka)).toEqual([1, 3]);
    expect(await counterValue(metrics.transactions, { result: 'commit' })).toBe(2);
  });

  it('commits the pages of a failed group alone until each commits, so a page that can never commit aborts only its own transactions', async () => {
    const kafka = new ScriptedKafka();
    const { sink } = sinkWith(kafka);
    await sink.start();
    const hasBad = (batch: ProducerBatch) =>
      (batch.topicMessages ?? []).some((t) => t.messages.some((m) => String(m.key).startsWith('bad-')));
    const gate = deferred();
    kafka.script.beforeSend = async (batch) => {
      await gate.promise;
      if (hasBad(batch)) throw protocolError('MESSAGE_TOO_LARGE');
    };
    const first = outcome(sink.commitPage(page('x', '1')));
    const group = [page('bad', '1'), page('a', '1'), page('b', '1')].map((p) => outcome(sink.commitPage(p)));
    gate.resolve();
    expect(await first).toBe('resolved');
    expect((await Promise.all(group)).map((o) => (typeof o === 'string' ? o : o.code))).toEqual([
      'KAFKA_TRANSACTION_ABORTED',
      'KAFKA_TRANSACTION_ABORTED',
      'KAFKA_TRANSACTION_ABORTED',
    ]);

    // Offered again together: the bad page goes alone and fails; the others commit.
    const hold = deferred();
    kafka.script.beforeSend = async (batch) => {
      await hold.promise;
      if (hasBad(batch)) throw protocolError('MESSAGE_TOO_LARGE');
    };
    const blocker = outcome(sink.commitPage(page('y', '1')));
    const again = [page('bad', '1'), page('a', '2'), page('b', '2')].map((p) => outcome(sink.commitPage(p)));
    hold.resolve();
    await blocker;
    expect((await Promise.all(again)).map((o) => (typeof o === 'string' ? o : o.code))).toEqual([
      'KAFKA_TRANSACTION_ABORTED',
      'resolved',
      'resolved',
    ]);
  });

  it('caps a transaction at maxPagesPerTransaction pages', async () => {
    const kafka = new ScriptedKafka();
    const { sink } = sinkWith(kafka, { maxPagesPerTransaction: 2 });
    await sink.start();
    const gate = deferred();
    kafka.script.beforeSend = () => gate.promise;

    const all = ['a', 'b', 'c', 'd', 'e', 'f'].map((l) => sink.commitPage(page(l, '1')));
    gate.resolve();
    await Promise.all(all);

    expect(pagesPerTransaction(kafka)).toEqual([1, 2, 2, 1]);
  });

  it('caps a transaction at about maxBytesPerTransaction bytes, but always takes one page', async () => {
    const kafka = new ScriptedKafka();
    const onePage = pageMessagesBytes(page('a', '1'));
    const { sink } = sinkWith(kafka, { maxBytesPerTransaction: onePage * 2 + 1 });
    await sink.start();
    const gate = deferred();
    kafka.script.beforeSend = () => gate.promise;

    // Pages of about a third of the cap, except one larger than the cap on its own.
    const big: PageCommit = {
      ...page('big', '1'),
      calls: Array.from({ length: 200 }, (_, i) => sampleCall({ uid: `big-${i}` })),
    };
    const all = [page('a', '1'), page('b', '1'), page('c', '1'), page('d', '1'), big, page('e', '1')].map(
      (p) => sink.commitPage(p),
    );
    gate.resolve();
    await Promise.all(all);

    expect(pagesPerTransaction(kafka)).toEqual([1, 2, 1, 1, 1]);
  });

  it('sends a page larger than maxBytesPerTransaction in several sends of one transaction, so no record batch outgrows the broker limit', async () => {
    const kafka = new ScriptedKafka();
    const onePage = pageMessagesBytes(page('a', '1'));
    const { sink } = sinkWith(kafka, { maxBytesPerTransaction: onePage * 3 });
    await sink.start();
    const big: PageCommit = {
      ...page('big', '1'),
      calls: Array.from({ length: 20 }, (_, i) => sampleCall({ uid: `big-${i}` })),
    };
    await sink.commitPage(big);
    expect(kafka.committed).toHaveLength(1);
    const sends = kafka.committed[0] ?? [];
    expect(sends.length).toBeGreaterThan(1);
    const sent = sends.flatMap((b) => b.topicMessages ?? []);
    expect(
      sent.filter((t) => t.topic === 'calls').flatMap((t) => t.messages.map((m) => String(m.key))),
    ).toEqual(big.calls.map((c) => c.uid));
    expect(pagesPerTransaction(kafka)).toEqual([1]);
  });

  it('resolves the pages of a commit that failed but took effect, as the stored offsets show after a rebuild', async () => {
    const kafka = new ScriptedKafka();
    const p = page('a', 'next');
    const { sink, metrics } = sinkWith(kafka, { stored: () => new Map([['a', p.offset]]) });
    await sink.start();
    kafka.script.commit = async () => {
      throw protocolError('REQUEST_TIMED_OUT');
    };

    const result = sink.commitPage(p);
    const settled = await outcome(result);
    expect(settled).toBe('resolved');
    expect(kafka.producersBuilt).toBe(2);
    expect(await counterValue(metrics.producerRecreated, { code: 'REQUEST_TIMED_OUT' })).toBe(1);
    expect(await counterValue(metrics.transactions, { result: 'commit' })).toBe(1);
  });

  it('does not take a failed commit for done when its pages left every offset as it was', async () => {
    // The page carries a dead letter but its offset equals the one stored before it: finding that offset
    // stored proves nothing, so the page must not be reported committed (it would be lost if aborted).
    const kafka = new ScriptedKafka();
    const before: LocationOffset = {
      since: null,
      cursor: 'same',
      watermark: '2024-05-01T10:00:00Z',
      boundary: [],
    };
    const { sink } = sinkWith(kafka, { stored: () => new Map([['a', before]]) });
    await sink.start();
    kafka.script.commit = async () => {
      throw protocolError('REQUEST_TIMED_OUT');
    };
    const unchanged: PageCommit = {
      locationUid: 'a',
      calls: [],
      deadLetters: [{ locationUid: 'a', code: 'ITEM_NO_UID', message: 'no uid', payload: '{}' }],
      offset: before,
      committed: before,
    };
    const settled = await outcome(sink.commitPage(unchanged));
    expect(settled).not.toBe('resolved');
    expect((settled as ConnectorError).disposition).toBe('retriable');
  });

  it('answers rejected for the pages of a commit that failed and did not take effect, reading only their locations', async () => {
    const kafka = new ScriptedKafka();
    const { sink, metrics, reads } = sinkWith(kafka, {
      stored: () =>
        new Map([
          ['a', page('a', 'previous').offset],
          ['z', page('z', 'elsewhere').offset],
        ]),
    });
    await sink.start();
    kafka.script.commit = async () => {
      throw protocolError('NOT_COORDINATOR');
    };

    const result = await sink.commitPage({ ...page('a', 'next'), committed: page('a', 'previous').offset });
    expect(result).toMatchObject({
      kind: 'rejected',
      reason: { code: 'KAFKA_COMMIT_OUTCOME_UNKNOWN', disposition: 'retriable' },
      generation: sink.generation(),
    });
    expect(reads).toEqual([['a']]);
    expect(await counterValue(metrics.transactions, { result: 'abort' })).toBe(1);
  });

  it('writes again, alone, the offset of a page whose calls are visible after a commit of unknown outcome while the store shows the committed offset', async () => {
    // Issue 20: a hanging transaction an operator aborted took the page's offset record, not its calls.
    const kafka = new ScriptedKafka();
    const previous = page('a', 'previous').offset;
    const asked: RecordPosition[] = [];
    const { sink, metrics } = sinkWith(kafka, {
      stored: () => new Map([['a', previous]]),
      published: async (positions) => {
        asked.push(...positions);
        return positions.map(() => true);
      },
    });
    await sink.start();
    kafka.script.commit = async () => {
      kafka.script.commit = async () => undefined; // the rewrite commits
      throw protocolError('REQUEST_TIMED_OUT');
    };

    const p = { ...page('a', 'next'), committed: previous };
    const result = await sink.commitPage(p);
    expect(result).toMatchObject({ kind: 'stored' });
    // The witnesses: the first call record of the failed transaction per partition, where the broker placed it.
    expect(asked).toEqual([{ topic: 'calls', partition: 0, offset: '100' }]);
    // One transaction committed after the failed one: the offset record alone, no call published twice.
    expect(kafka.committed).toHaveLength(1);
    const rewrite = kafka.committed[0]!.flatMap((b) => b.topicMessages ?? []);
    expect(rewrite.map((t) => [t.topic, t.messages.length])).toEqual([['offsets', 1]]);
    expect(kafka.sent.flatMap((b) => b.topicMessages ?? []).filter((t) => t.topic === 'calls')).toHaveLength(
      1,
    );
    expect(await counterValue(metrics.pageRewrites)).toBe(1);
  });

  it('publishes again only the part of a committed page on a partition an operator aborted since, with its offset', async () => {
    const kafka = new ScriptedKafka();
    const previous = page('a', 'previous').offset;
    const { sink, metrics } = sinkWith(kafka, {
      stored: () => new Map([['a', previous]]),
      // The call's partition kept its commit marker; the dead letter's was aborted by the operator.
      published: async (positions) => positions.map((p) => p.topic === 'calls'),
      partitionCount: async () => 1,
    });
    await sink.start();
    kafka.script.commit = async () => {
      kafka.script.commit = async () => undefined;
      throw protocolError('REQUEST_TIMED_OUT');
    };
    const withDeadLetter: PageCommit = {
      ...page('a', 'next'),
      deadLetters: [{ locationUid: 'a', code: 'ITEM_NO_UID', message: 'no uid', payload: '{}' }],
      committed: previous,
    };
    expect(await sink.commitPage(withDeadLetter)).toMatchObject({ kind: 'stored' });
    const again = kafka.committed.flatMap((batches) => batches.flatMap((b) => b.topicMessages ?? []));
    expect(again.map((t) => [t.topic, t.messages.length])).toEqual([
      ['dlq', 1],
      ['offsets', 1],
    ]);
    expect(await counterValue(metrics.pageRewrites)).toBe(1);
  });

  it("reads again while the transaction of a commit's call is still open, instead of settling on the offsets alone", async () => {
    // The broker-kill reproduction: a call's partition still held back by the transaction; the offsets read
    // alone (rejected) would publish the page again.
    const kafka = new ScriptedKafka();
    const clock = new ManualClock();
    const previous = page('a', 'previous').offset;
    let open = true;
    const { sink, reads } = sinkWith(kafka, {
      clock,
      stored: () => new Map([['a', previous]]),
      published: async (positions) => {
        if (open) throw new RetriableError('KAFKA_TRANSACTION_OPEN', 'the call transaction is still open');
        return positions.map(() => true);
      },
    });
    await sink.start();
    kafka.script.commit = async () => {
      kafka.script.commit = async () => undefined;
      throw protocolError('REQUEST_TIMED_OUT');
    };

    const result = sink.commitPage({ ...page('a', 'next'), committed: previous });
    await clock.sleeping(); // the check could not tell yet: waiting to read again
    expect(reads).toHaveLength(1);
    open = false;
    clock.advance(500);
    expect(await result).toMatchObject({ kind: 'stored' });
    expect(reads).toHaveLength(2);
    expect(kafka.committed.flatMap((batches) => batches.flatMap((b) => b.topicMessages ?? []))).toEqual([
      expect.objectContaining({ topic: 'offsets' }),
    ]);
  });

  it('commits the page again when its calls are not visible after a commit of unknown outcome, and when they cannot be read', async () => {
    for (const published of [
      async (positions: readonly RecordPosition[]) => positions.map(() => false),
      async (): Promise<boolean[]> => {
        throw new FatalError('KAFKA_NOT_PERMITTED', 'no Read on calls');
      },
    ]) {
      const kafka = new ScriptedKafka();
      const previous = page('a', 'previous').offset;
      const fatal: FatalError[] = [];
      const { sink, metrics } = sinkWith(kafka, {
        stored: () => new Map([['a', previous]]),
        published,
        onFatal: (e) => fatal.push(e),
      });
      await sink.start();
      kafka.script.commit = async () => {
        throw protocolError('REQUEST_TIMED_OUT');
      };
      const result = await sink.commitPage({ ...page('a', 'next'), committed: previous });
      expect(result).toMatchObject({ kind: 'rejected', reason: { code: 'KAFKA_COMMIT_OUTCOME_UNKNOWN' } });
      expect(await counterValue(metrics.pageRewrites)).toBe(0);
      expect(fatal).toEqual([]); // a refused read of the calls is not the sink's failure
    }
  });

  it('never adopts a read-back older than the committed offset after a failed commit: it reads again until the read decides', async () => {
    // Issue 20, point 3: a read behind pending transaction markers shows an OLDER offset.
    const kafka = new ScriptedKafka();
    const clock = new ManualClock();
    const committed: LocationOffset = {
      since: null,
      cursor: 'c1',
      watermark: '2024-05-01T10:00:00Z',
      boundary: [],
    };
    const older: LocationOffset = {
      since: null,
      cursor: null,
      watermark: '2024-05-01T09:00:00Z',
      boundary: [],
    };
    const p = { ...page('a', 'next'), committed };
    let stored = older;
    const { sink, reads } = sinkWith(kafka, { clock, stored: () => new Map([['a', stored]]) });
    await sink.start();
    kafka.script.commit = async () => {
      throw protocolError('REQUEST_TIMED_OUT');
    };

    const result = outcome(sink.commitPage(p));
    await clock.sleeping(); // the first read lagged: waiting to read again
    expect(reads).toHaveLength(1);
    stored = p.offset;
    clock.advance(500);
    expect(await result).toBe('resolved');
    expect(reads).toHaveLength(2);
  });

  it('stops the process rather than hold every page behind offsets that keep reading older than committed', async () => {
    const kafka = new ScriptedKafka();
    const clock = new ManualClock();
    const fatal: FatalError[] = [];
    const committed: LocationOffset = {
      since: null,
      cursor: 'c1',
      watermark: '2024-05-01T10:00:00Z',
      boundary: [],
    };
    const { sink, reads } = sinkWith(kafka, {
      clock,
      onFatal: (e) => fatal.push(e),
      stored: () => new Map(),
    });
    await sink.start();
    kafka.script.commit = async () => {
      throw protocolError('REQUEST_TIMED_OUT');
    };
    let settled = false;
    const result = outcome(sink.commitPage({ ...page('a', 'next'), committed })).finally(
      () => (settled = true),
    );
    while (!settled) {
      await Promise.race([clock.sleeping(), result]);
      clock.advance(30_000);
    }
    const error = (await result) as ConnectorError;
    expect(error).toBeInstanceOf(FatalError);
    expect(error.code).toBe('KAFKA_OFFSETS_UNSETTLED');
    expect(fatal).toEqual([error]);
    expect(reads).toHaveLength(8);
  });

  it('answers superseded with what another writer stored, for a page prepared before the producer was initialised again', async () => {
    const kafka = new ScriptedKafka();
    const committed = page('a', 'mine').offset;
    const theirs: LocationOffset = {
      since: null,
      cursor: 'theirs',
      watermark: '2024-05-01T12:00:00Z',
      boundary: [],
    };
    const { sink } = sinkWith(kafka, { stored: () => new Map([['a', theirs]]) });
    await sink.start();
    const before = sink.generation();
    kafka.script.beforeSend = async () => {
      throw protocolError('REQUEST_TIMED_OUT');
    };
    await sink.commitPage({ ...page('x', '1'), generation: before });
    kafka.script.beforeSend = async () => undefined;

    const result = await sink.commitPage({ ...page('a', 'next'), committed, generation: before });
    expect(result).toMatchObject({ kind: 'superseded', stored: theirs, generation: before + 1 });
    expect(kafka.committed).toEqual([]);
  });

  it('stops for good when Kafka refuses the transactional id, telling onFatal once and rejecting later pages', async () => {
    const kafka = new ScriptedKafka();
    const fatal: FatalError[] = [];
    const { sink } = sinkWith(kafka, { onFatal: (e) => fatal.push(e) });
    await sink.start();
    kafka.script.beforeSend = async () => {
      throw protocolError('TRANSACTIONAL_ID_AUTHORIZATION_FAILED');
    };

    const error = (await outcome(sink.commitPage(page('a', '1')))) as ConnectorError;
    expect(error).toBeInstanceOf(FatalError);
    expect(error.code).toBe('KAFKA_NOT_PERMITTED');
    expect(await outcome(sink.commitPage(page('b', '1')))).toBe(error);
    expect(fatal).toEqual([error]);
  });

  it('closes within its timeout while a transaction hangs, rejecting what is queued and refusing new pages', async () => {
    const kafka = new ScriptedKafka();
    const { sink } = sinkWith(kafka);
    await sink.start();
    kafka.script.beforeSend = () => new Promise<void>(() => undefined); // never answers

    void sink.commitPage(page('a', '1')).catch(() => undefined);
    const queued = outcome(sink.commitPage(page('b', '1')));
    await sink.close(50);

    expect(((await queued) as ConnectorError).code).toBe('KAFKA_SINK_CLOSED');
    expect(((await outcome(sink.commitPage(page('c', '1')))) as ConnectorError).code).toBe(
      'KAFKA_SINK_CLOSED',
    );
  });

  it('builds no producer after a timed-out close when the commit it left behind fails later', async () => {
    // The page's outcome is then unknown; a producer built after close would keep the process alive.
    const kafka = new ScriptedKafka();
    const { sink } = sinkWith(kafka);
    await sink.start();
    let failEndTxn: () => void = () => undefined;
    kafka.script.commit = () =>
      new Promise<void>((_, reject) => (failEndTxn = () => reject(protocolError('REQUEST_TIMED_OUT'))));

    const result = outcome(sink.commitPage(page('a', '1')));
    await sink.close(50);
    const builtBeforeClose = kafka.producersBuilt;
    failEndTxn();

    expect(((await result) as ConnectorError).code).toBe('KAFKA_COMMIT_OUTCOME_UNKNOWN');
    expect(kafka.producersBuilt).toBe(builtBeforeClose);
  });

  it('stops retrying to settle a failed commit when closed while Kafka is down, leaving the outcome to the next start', async () => {
    // The retry waits are on the sink's clock and end with close: a closed sink keeps no timer alive.
    const kafka = new ScriptedKafka();
    const clock = new ManualClock();
    const { sink } = sinkWith(kafka, { clock });
    await sink.start();
    kafka.script.commit = async () => {
      throw protocolError('REQUEST_TIMED_OUT');
    };
    kafka.script.connect = async () => {
      throw new Error('Connection error: ECONNREFUSED');
    };

    const result = outcome(sink.commitPage(page('a', '1')));
    await clock.sleeping(); // the settle loop waits before its next attempt
    const closed = sink.close(100);
    await clock.sleeping(2);
    clock.advance(100); // the close timeout, before the retry wait of 500 ms ends

    await closed;
    expect(((await result) as ConnectorError).code).toBe('KAFKA_COMMIT_OUTCOME_UNKNOWN');
    expect(clock.pending).toBe(0);
  });

  it('stands by at its start, initialising nothing, when an instance started after this one runs (a start paused before its first initialisation)', async () => {
    // Issue 20, found by the chaos suite: a start frozen before its producer's first initialisation woke after
    // its replacement had taken over, and that first initialisation fenced the replacement.
    const kafka = new ScriptedKafka();
    const fatal: FatalError[] = [];
    const { sink } = sinkWith(kafka, { onFatal: (e) => fatal.push(e), newest: async () => false });

    const error = await rejectionOf(sink.start());
    expect(error).toBeInstanceOf(FatalError);
    expect((error as FatalError).code).toBe('KAFKA_FENCED_BY_ANOTHER_INSTANCE');
    expect(fatal).toEqual([error]);
    expect(kafka.producersBuilt).toBe(0);
    expect(await outcome(sink.commitPage(page('a', '1')))).toBe(error);
    await sink.close();
  });

  it('asks the instances group before its first initialisation and before each one after a failure, saying which', async () => {
    const kafka = new ScriptedKafka();
    const asked: string[] = [];
    const { sink } = sinkWith(kafka, {
      newest: async (initialisation) => (asked.push(initialisation), true),
    });
    await sink.start();
    kafka.script.beforeSend = async () => {
      kafka.script.beforeSend = async () => undefined;
      throw protocolError('REQUEST_TIMED_OUT');
    };
    await outcome(sink.commitPage(page('a', '1')));
    await sink.close();
    expect(asked).toEqual(['first', 'again']);
    expect(kafka.producersBuilt).toBe(2);
  });

  it('does not start while the instances group cannot be read (retriable: the start waits), and builds no producer', async () => {
    const kafka = new ScriptedKafka();
    const { sink } = sinkWith(kafka, {
      newest: () => Promise.reject(new Error('the group did not settle with this instance in it')),
    });

    const error = await rejectionOf(sink.start());
    expect(error).toBeInstanceOf(RetriableError);
    expect((error as RetriableError).code).toBe('KAFKA_INSTANCES_UNKNOWN');
    expect(kafka.producersBuilt).toBe(0);
    await sink.close();
  });

  it('stands down for good when fenced while a newer instance is in the instances group, building no producer that would fence it back', async () => {
    const kafka = new ScriptedKafka();
    const fatal: FatalError[] = [];
    const { sink } = sinkWith(kafka, { onFatal: (e) => fatal.push(e), newest: newerInstanceAfterStart() });
    await sink.start();
    const generation = sink.generation();
    kafka.script.beforeSend = async () => {
      throw protocolError('INVALID_PRODUCER_EPOCH');
    };

    const error = (await outcome(sink.commitPage(page('a', '1')))) as ConnectorError;
    expect(error).toBeInstanceOf(FatalError);
    expect(error.code).toBe('KAFKA_FENCED_BY_ANOTHER_INSTANCE');
    expect(fatal).toEqual([error]);
    kafka.script.beforeSend = async () => undefined;
    expect(await outcome(sink.commitPage(page('b', '1')))).toBe(error);
    await sink.close();
    expect(kafka.producersBuilt).toBe(1);
    expect(sink.generation()).toBe(generation);
  });

  it('stands down when a paused instance finds its old transaction fenced while a newer instance runs, whatever the transaction age', async () => {
    // Issue 20: paused past transactionTimeoutMs, the age rule took the fencing for its own timeout and
    // rebuilt, fencing the replacement back.
    const kafka = new ScriptedKafka();
    let now = 1_000_000;
    const { sink } = sinkWith(kafka, { clock: clockReading(() => now), newest: newerInstanceAfterStart() });
    await sink.start();
    kafka.script.beforeSend = async () => {
      now += 75_000; // SIGSTOP for 75 s, longer than transactionTimeoutMs (60 s)
      throw protocolError('INVALID_PRODUCER_EPOCH');
    };
    const error = (await outcome(sink.commitPage(page('a', '1')))) as ConnectorError;
    expect(error.code).toBe('KAFKA_FENCED_BY_ANOTHER_INSTANCE');
    expect(kafka.producersBuilt).toBe(1);
  });

  it('does not re-initialise after a failure that is not a fencing while a newer instance runs: it stands down', async () => {
    const kafka = new ScriptedKafka();
    const { sink } = sinkWith(kafka, { newest: newerInstanceAfterStart() });
    await sink.start();
    kafka.script.beforeSend = async () => {
      throw protocolError('REQUEST_TIMED_OUT');
    };
    const error = (await outcome(sink.commitPage(page('a', '1')))) as ConnectorError;
    expect(error.code).toBe('KAFKA_FENCED_BY_ANOTHER_INSTANCE');
    expect(kafka.producersBuilt).toBe(1);
  });

  it('does not re-initialise to settle a failed commit while a newer instance runs', async () => {
    const kafka = new ScriptedKafka();
    const { sink } = sinkWith(kafka, { newest: newerInstanceAfterStart() });
    await sink.start();
    kafka.script.commit = async () => {
      throw protocolError('NOT_COORDINATOR');
    };
    const error = (await outcome(sink.commitPage(page('a', '1')))) as ConnectorError;
    expect(error.code).toBe('KAFKA_FENCED_BY_ANOTHER_INSTANCE');
    expect(kafka.producersBuilt).toBe(1);
  });

  it('builds no producer while the instances group cannot be read, and rebuilds once it shows no newer instance', async () => {
    const kafka = new ScriptedKafka();
    let answer: () => Promise<boolean> = async () => true;
    const { sink } = sinkWith(kafka, { newest: () => answer() });
    await sink.start();
    answer = () => Promise.reject(new Error('coordinator loading'));
    kafka.script.beforeSend = async () => {
      throw protocolError('REQUEST_TIMED_OUT');
    };
    const first = (await outcome(sink.commitPage(page('a', '1')))) as ConnectorError;
    expect(first.disposition).toBe('retriable');
    expect(kafka.producersBuilt).toBe(1);
    kafka.script.beforeSend = async () => undefined;
    answer = async () => true;
    expect(await outcome(sink.commitPage(page('a', '1')))).toBe('resolved');
    expect(kafka.producersBuilt).toBe(2);
  });

  it('rebuilds the producer after a fencing when the instances group shows no newer instance, and counts a new generation', async () => {
    const kafka = new ScriptedKafka();
    let now = 1_000_000;
    const { sink } = sinkWith(kafka, { clock: clockReading(() => now) });
    await sink.start();
    const generation = sink.generation();
    kafka.script.beforeSend = async () => {
      now += 60_000; // transactionTimeoutMs: the coordinator aborted the transaction for its age
      throw protocolError('INVALID_PRODUCER_EPOCH');
    };

    const error = (await outcome(sink.commitPage(page('a', '1')))) as ConnectorError;
    expect(error.code).toBe('KAFKA_PRODUCER_FENCED');
    expect(error.disposition).toBe('retriable');
    expect(kafka.producersBuilt).toBe(2);
    expect(sink.generation()).toBe(generation + 1);
    kafka.script.beforeSend = async () => undefined;
    expect(await outcome(sink.commitPage(page('a', '1')))).toBe('resolved');
  });

  it('refuses a page prepared under an older producer generation instead of committing it under the new one', async () => {
    const kafka = new ScriptedKafka();
    const { sink } = sinkWith(kafka);
    await sink.start();
    const before = sink.generation();
    kafka.script.beforeSend = async () => {
      throw protocolError('REQUEST_TIMED_OUT');
    };
    await outcome(sink.commitPage({ ...page('a', '1'), generation: before }));
    expect(sink.generation()).toBe(before + 1);
    kafka.script.beforeSend = async () => undefined;

    const stale = (await outcome(
      sink.commitPage({ ...page('a', '1'), generation: before }),
    )) as ConnectorError;
    expect(stale.code).toBe('KAFKA_PAGE_FROM_OLD_PRODUCER');
    expect(stale.disposition).toBe('retriable');
    expect(kafka.committed).toEqual([]);
    expect(await outcome(sink.commitPage({ ...page('a', '1'), generation: before + 1 }))).toBe('resolved');
    expect(kafka.committed).toHaveLength(1);
  });

  it('distributed mode: any loss of the producer, not only a fencing, hands the partition back without re-initialising', async () => {
    for (const failure of ['send', 'commit'] as const) {
      const kafka = new ScriptedKafka();
      let takenOver = 0;
      const { sink } = sinkWith(kafka, { onTakenOver: () => (takenOver += 1) });
      await sink.start();
      if (failure === 'send')
        kafka.script.beforeSend = async () => {
          throw protocolError('REQUEST_TIMED_OUT');
        };
      else
        kafka.script.commit = async () => {
          throw protocolError('NOT_COORDINATOR');
        };
      // A rejection, not a 'rejected' outcome: this sink commits nothing more, so the location does not
      // retry the page here; the partition's next owner writes it.
      const error = (await rejectionOf(sink.commitPage(page('a', '1')))) as ConnectorError;
      expect(error.code).toBe('KAFKA_PARTITION_TAKEN_OVER');
      expect(error.disposition).toBe('retriable');
      expect(takenOver).toBe(1);
      expect(kafka.producersBuilt).toBe(1);
      await sink.close();
      expect(kafka.producersBuilt).toBe(1);
    }
  });

  it('stops the process on a programmer error instead of retrying it or leaving the group stopped', async () => {
    const kafka = new ScriptedKafka();
    const fatal: FatalError[] = [];
    const { sink } = sinkWith(kafka, { onFatal: (e) => fatal.push(e) });
    await sink.start();
    const bug = new TypeError('Cannot read properties of undefined');
    kafka.script.beforeSend = async () => {
      throw bug;
    };
    const error = (await outcome(sink.commitPage(page('a', '1')))) as ConnectorError;
    expect(error.code).toBe('SINK_PROGRAMMER_ERROR');
    expect(error.cause).toBe(bug);
    expect(fatal).toEqual([error]);
  });

  it('fails to start with a fatal error when the transactional id is not permitted, and a retriable one otherwise', async () => {
    const refused = new ScriptedKafka();
    refused.script.connect = async () => {
      throw protocolError('TRANSACTIONAL_ID_AUTHORIZATION_FAILED');
    };
    const startError = await rejectionOf(sinkWith(refused).sink.start());
    expect(startError).toBeInstanceOf(FatalError);

    const down = new ScriptedKafka();
    down.script.connect = async () => {
      throw new Error('Connection error: ECONNREFUSED');
    };
    const downError = await rejectionOf(sinkWith(down).sink.start());
    expect((downError as ConnectorError).code).toBe('KAFKA_UNAVAILABLE');
    expect((downError as ConnectorError).disposition).toBe('retriable');
  });
});
