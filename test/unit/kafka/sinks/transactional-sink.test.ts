/**
 * The exactly-once sink's sequencing with scripted producers: group commit, the group caps, pages of a failed
 * group committed alone, pages of an older producer refused, fatal refusals and bounded close. Its parts have
 * their own tests beside this one (init-rule, transactional-producer, settlement, sink-errors); the broker-facing
 * behaviour is in test/integration/kafka/sinks.
 */
import { describe, expect, it } from 'vitest';
import { ConnectorError, FatalError } from '../../../../src/errors/index.js';
import type { ProducerBatch } from 'kafkajs';
import type { PageCommit } from '../../../../src/sync/ports.js';
import { counterValue } from '../../../support/counters.js';
import { sampleCall } from '../../../support/calls.js';
import { rejectionOf } from '../../../support/rejection.js';
import { protocolError } from '../../../support/kafka-errors.js';
import { deferred } from '../../../support/async.js';
import {
  ScriptedKafka,
  sinkWith,
  page,
  outcome,
  pageMessagesBytes,
  pagesPerTransaction,
} from '../../../support/scripted-kafka.js';

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
