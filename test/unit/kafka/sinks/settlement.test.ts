/**
 * The read-back after a failed write: the plan of what goes again and the read-back policy (pure), and the
 * settlement as the sink runs it with scripted producers: a commit of unknown outcome found stored, aborted or
 * partly lost, stale reads never adopted, a page of an older producer read back, a close while settling.
 */
import { describe, expect, it } from 'vitest';
import { ConnectorError, FatalError, RetriableError } from '../../../../src/errors/index.js';
import { offsetOnly, pageMessages } from '../../../../src/kafka/records/page-messages.js';
import type { RecordPosition } from '../../../../src/kafka/sinks/commit-witnesses.js';
import { HEAL_RECORD_KEY } from '../../../../src/kafka/sinks/hanging-transaction-heal-rule.js';
import { MAX_UNSETTLED_READS, readBackDelayMs, rewritePlan } from '../../../../src/kafka/sinks/settlement.js';
import type { LocationOffset } from '../../../../src/sync/model.js';
import type { PageCommit } from '../../../../src/sync/ports.js';
import { counterValue } from '../../../support/counters.js';
import { protocolError } from '../../../support/kafka-errors.js';
import { ManualClock } from '../../../support/clock.js';
import { ScriptedKafka, sinkWith, page, outcome, encoder, topics } from '../../../support/scripted-kafka.js';

describe('rewritePlan', () => {
  const messages = (location: string) => pageMessages(page(location, '1'), encoder, 'conn', new Date());

  it('writes nothing again of a page the rule decided, and the offset record alone of a rewrite-offset page', () => {
    const [decided, rewrite] = [messages('a'), messages('b')];
    const plan = rewritePlan([decided, rewrite], ['read-again', 'rewrite-offset'], [], topics, new Map());
    expect(plan[0]).toBeUndefined();
    expect(plan[1]).toEqual(offsetOnly(rewrite));
    expect(plan[1]?.calls).toEqual([]);
  });

  it('writes again the records of a republish-lost page on its lost partitions, with its offset record', () => {
    const lost = messages('a');
    const onLost = [{ topic: 'calls', partition: 0, offset: '5' }];
    // The calls topic's partition count is unknown: every call of the page goes again (repeated, never lost).
    const plan = rewritePlan([lost], ['republish-lost'], onLost, topics, new Map([['calls', undefined]]));
    expect(plan[0]?.calls).toEqual(lost.calls);
    expect(plan[0]?.offset).toEqual(lost.offset);
  });

  it('writes none of the records of a topic whose every partition showed its part visible', () => {
    const lost = messages('a');
    const plan = rewritePlan([lost], ['republish-lost'], [], topics, new Map());
    expect(plan[0]?.calls).toEqual([]);
    expect(plan[0]?.offset).toEqual(lost.offset);
  });
});

describe('the read-back policy', () => {
  it('reads again after 0.5 s, doubling up to 30 s', () => {
    expect([1, 2, 3, 7, 8, 20].map(readBackDelayMs)).toEqual([500, 1_000, 2_000, 30_000, 30_000, 30_000]);
  });

  it('gives up after 8 reads that do not decide, with a minute of waits between them', () => {
    expect(MAX_UNSETTLED_READS).toBe(8);
    const waits = Array.from({ length: MAX_UNSETTLED_READS - 1 }, (_, i) => readBackDelayMs(i + 1));
    expect(waits.reduce((a, b) => a + b, 0)).toBe(61_500);
  });
});

/** An offsets read stopped by a transaction open on `partition` at `offset` (stable-offsets.ts's error). */
function stuckOn(partition: number, offset: string): never {
  throw new RetriableError('KAFKA_TRANSACTION_OPEN', 'a transaction on offsets has stayed open', {
    details: { topic: 'offsets', partitions: [partition], stableOffsets: [offset] },
  });
}

describe('settling a failed write in the sink (scripted producer)', () => {
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

  it('ends its own commit hanging on an offsets partition with an abort of its own, then commits the page again', async () => {
    // KAFKA-20734: the coordinator completed the commit without the offsets partition's marker. The partition's
    // last stable offset stays where the transaction began ('100': the scripted broker's answer to its send).
    for (const stuckAt of ['100', '7']) {
      const kafka = new ScriptedKafka();
      const clock = new ManualClock();
      const previous = page('a', 'previous').offset;
      let hanging = true;
      const { sink, metrics } = sinkWith(kafka, {
        clock,
        stored: () => (hanging ? stuckOn(0, stuckAt) : new Map([['a', previous]])),
        published: async (positions) => positions.map(() => false),
      });
      await sink.start();
      kafka.script.commit = async () => {
        kafka.script.commit = async () => undefined;
        throw protocolError('REQUEST_TIMED_OUT');
      };
      const result = sink.commitPage({ ...page('a', 'next'), committed: previous });
      await clock.sleeping();
      const heals = kafka.sent.filter((b) =>
        (b.topicMessages ?? []).some((t) => t.messages.some((m) => m.key === HEAL_RECORD_KEY)),
      );
      if (stuckAt === '7') {
        // Stuck where our transaction did not begin: another producer's, left to its timeout or the operator.
        expect(heals).toEqual([]);
        expect(await counterValue(metrics.hangingTransactionsHealed)).toBe(0);
        void result.catch(() => undefined);
        continue;
      }
      expect(heals.map((b) => b.topicMessages)).toEqual([
        [{ topic: 'offsets', messages: [{ partition: 0, key: HEAL_RECORD_KEY, value: null }] }],
      ]);
      expect(await counterValue(metrics.hangingTransactionsHealed)).toBe(1);
      hanging = false; // the abort marker ended it
      clock.advance(500);
      // Nothing of the page is visible: it is committed again by its location, never published twice.
      expect(await result).toMatchObject({ kind: 'rejected' });
      expect(kafka.committed).toEqual([]);
    }
  });

  it('ends a transaction hanging from a failed send whose answer was lost, met by a later read-back of the offsets', async () => {
    // The kill took the send's answer: no offset proves the record there, but the offsets partition of a failed
    // write of ours may hold it; an abort marker of our producer id can end nothing else.
    const kafka = new ScriptedKafka();
    const clock = new ManualClock();
    let hanging = true;
    const { sink, metrics } = sinkWith(kafka, {
      clock,
      stored: () => (hanging ? stuckOn(1, '13') : new Map()),
    });
    await sink.start();
    const before = sink.generation();
    kafka.script.beforeSend = async () => {
      kafka.script.beforeSend = async () => undefined;
      throw protocolError('NOT_LEADER_OR_FOLLOWER');
    };
    expect(await sink.commitPage(page('a', 'first'))).toMatchObject({ kind: 'rejected' });
    // A page prepared under the producer before the failure is read back (the rule wants its stored offset).
    const refused = sink.commitPage({ ...page('b', 'next'), generation: before });
    await clock.sleeping();
    const heals = kafka.sent.filter((b) =>
      (b.topicMessages ?? []).some((t) => t.messages.some((m) => m.key === HEAL_RECORD_KEY)),
    );
    expect(heals.map((b) => b.topicMessages)).toEqual([
      [{ topic: 'offsets', messages: [{ partition: 1, key: HEAL_RECORD_KEY, value: null }] }],
    ]);
    expect(await counterValue(metrics.hangingTransactionsHealed)).toBe(1);
    hanging = false;
    clock.advance(500);
    expect(await refused).toMatchObject({ kind: 'rejected' });
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
});
