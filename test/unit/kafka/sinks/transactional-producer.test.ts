/**
 * One transaction's I/O (TransactionWriter) over a scripted producer: the pages' records sent in chunks within
 * maxBytesPerTransaction, the stage that failed, and where a failed commit's records landed.
 */
import { Histogram } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { pageMessages } from '../../../../src/kafka/records/page-messages.js';
import {
  initTransactions,
  TransactionFailure,
  TransactionWriter,
} from '../../../../src/kafka/sinks/transactional-producer.js';
import { silentLogger } from '../../../../src/logging/logger.js';
import type { PageCommit } from '../../../../src/sync/ports.js';
import { sampleCall } from '../../../support/calls.js';
import { ManualClock } from '../../../support/clock.js';
import { protocolError } from '../../../support/kafka-errors.js';
import { rejectionOf } from '../../../support/rejection.js';
import {
  encoder,
  page,
  pageMessagesBytes,
  pagesPerTransaction,
  ScriptedKafka,
  topics,
} from '../../../support/scripted-kafka.js';

/** A writer with the one metric it updates, registered nowhere. */
function writerWith(maxBytesPerTransaction = 1_000_000, clock = new ManualClock()): TransactionWriter {
  const transactionCommitDuration = new Histogram({ name: 'commit_seconds', help: 'commit', registers: [] });
  return new TransactionWriter({
    topics,
    maxBytesPerTransaction,
    metrics: { transactionCommitDuration },
    logger: silentLogger(),
    clock,
  });
}

const messagesOf = (commit: PageCommit) => pageMessages(commit, encoder, 'conn', new Date());

describe('TransactionWriter', () => {
  it('sends a page larger than maxBytesPerTransaction in several sends of one transaction, so no record batch outgrows the broker limit', async () => {
    const kafka = new ScriptedKafka();
    const big: PageCommit = {
      ...page('big', '1'),
      calls: Array.from({ length: 20 }, (_, i) => sampleCall({ uid: `big-${i}` })),
    };
    const writer = writerWith(pageMessagesBytes(page('a', '1')) * 3);
    await writer.write(async () => kafka.producer(), [messagesOf(big)]);

    expect(kafka.committed).toHaveLength(1);
    const sends = kafka.committed[0] ?? [];
    expect(sends.length).toBeGreaterThan(1);
    const sent = sends.flatMap((b) => b.topicMessages ?? []);
    expect(
      sent.filter((t) => t.topic === 'calls').flatMap((t) => t.messages.map((m) => String(m.key))),
    ).toEqual(big.calls.map((c) => c.uid));
    expect(pagesPerTransaction(kafka)).toEqual([1]);
  });

  it('names the stage that failed: begin when no producer or transaction could be had', async () => {
    const failure = await rejectionOf(
      writerWith().write(() => Promise.reject(new Error('ECONNREFUSED')), [messagesOf(page('a', '1'))]),
    );
    expect(failure).toBeInstanceOf(TransactionFailure);
    expect((failure as TransactionFailure).stage).toBe('begin');
  });

  it('names the send stage, and aborts the transaction it leaves open', async () => {
    const kafka = new ScriptedKafka();
    const refused = protocolError('REQUEST_TIMED_OUT');
    kafka.script.beforeSend = async () => {
      throw refused;
    };
    const failure = (await rejectionOf(
      writerWith().write(async () => kafka.producer(), [messagesOf(page('a', '1'))]),
    )) as TransactionFailure;
    expect(failure.stage).toBe('send');
    expect(failure.original).toBe(refused);
    expect(kafka.committed).toEqual([]);
  });

  it("names the commit stage with where the transaction's first record on each partition outside the offsets topic landed", async () => {
    const kafka = new ScriptedKafka();
    kafka.script.commit = async () => {
      throw protocolError('NOT_COORDINATOR');
    };
    const failure = (await rejectionOf(
      writerWith().write(async () => kafka.producer(), [messagesOf(page('a', '1'))]),
    )) as TransactionFailure;
    expect(failure.stage).toBe('commit');
    expect(failure.witnesses).toEqual([{ topic: 'calls', partition: 0, offset: '100' }]);
  });

  it('records when the transaction began, for the report of a fencing', async () => {
    const kafka = new ScriptedKafka();
    const clock = new ManualClock();
    clock.advance(5_000);
    const writer = writerWith(1_000_000, clock);
    await writer.write(async () => kafka.producer(), [messagesOf(page('a', '1'))]);
    expect(writer.startedAt).toBe(clock.now());
  });
});

describe('initTransactions', () => {
  it('connects and initialises the transactions with an empty transaction it aborts, committing nothing', async () => {
    const kafka = new ScriptedKafka();
    let connected = 0;
    kafka.script.connect = async () => void (connected += 1);
    await initTransactions(kafka.producer());
    expect(connected).toBe(1);
    expect(kafka.committed).toEqual([]);
    expect(kafka.sent).toEqual([]);
  });
});
