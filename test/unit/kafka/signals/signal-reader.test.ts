/**
 * SignalTopicReader: the first read, then a consumer that reads on from where it was, restarted after a crash
 * kafkajs does not restart from. A retriable crash while it reads is left to kafkajs, but a crash caused by its
 * stop (the disconnect closing a fetch's connection) must not start it again, or the consumer outlives the
 * connector and the process never exits.
 */
import type { ConsumerConfig, Kafka } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { SignalTopicReader } from '../../../../src/kafka/signals/signal-reader.js';
import {
  encodeSignal,
  signalKey,
  type SignalTopicEntry,
} from '../../../../src/kafka/signals/signal-model.js';
import { silentLogger } from '../../../../src/logging/logger.js';
import { deferred, settles } from '../../../support/async.js';
import { ManualClock } from '../../../support/clock.js';
import { FakeConsumer } from '../../../support/fake-consumer.js';
import { protocolError } from '../../../support/kafka-errors.js';

const TOPIC = 'offsets-signals';

/** A Kafka whose signals topic is empty (the first read needs no consumer) and whose consumers the test drives. */
function reader(options: { offsets?: Promise<void> } = {}) {
  const clock = new ManualClock(1_000_000);
  const consumers: FakeConsumer[] = [];
  const configs: ConsumerConfig[] = [];
  const entries: SignalTopicEntry[] = [];
  const kafka = {
    admin: () => ({
      connect: () => Promise.resolve(),
      disconnect: () => Promise.resolve(),
      fetchTopicOffsets: async () => {
        await options.offsets;
        return [{ partition: 0, low: '0', high: '0', offset: '0' }];
      },
    }),
    consumer: (config: ConsumerConfig) => {
      configs.push(config);
      const consumer = new FakeConsumer(TOPIC);
      consumers.push(consumer);
      return consumer;
    },
  } as unknown as Kafka;
  const subject = new SignalTopicReader(kafka, {
    topic: TOPIC,
    connectorName: 'c',
    groupIdPrefix: 'c-signals',
    loadTimeoutMs: 10_000,
    each: (entry) => entries.push(entry),
    logger: silentLogger(),
    clock,
    restartBackoff: { initialDelayMs: 1_000, maxDelayMs: 60_000, multiplier: 2, jitter: 0 },
  });
  const current = (): FakeConsumer => {
    const last = consumers.at(-1);
    if (last === undefined) throw new Error('no consumer yet');
    return last;
  };
  return { subject, clock, consumers, configs, entries, current };
}

const signal = {
  id: '0b5f3a52-6a53-4a5f-9c1e-2f4f0e3f4a11',
  kind: 'pause' as const,
  location: 'L1',
  requestedAt: '2026-01-01T00:00:00Z',
  requestedBy: 'ops',
};

describe('the signals topic reader', () => {
  it('starts no consumer when stopped during its first read', async () => {
    const offsets = deferred();
    const r = reader({ offsets: offsets.promise });
    const started = r.subject.start();
    await r.subject.stop();
    offsets.resolve();
    await started;
    expect(r.consumers).toHaveLength(0);
  });

  it('is not healthy after a crash kafkajs does not restart from, and reads on with a new consumer from where it was', async () => {
    const r = reader();
    await r.subject.start();
    r.current().joined([0]);
    await r.current().deliver(0, '0', encodeSignal(signal), Buffer.from(signalKey('c', signal.id)));
    expect(r.entries).toHaveLength(1);

    r.current().crashed(protocolError('GROUP_AUTHORIZATION_FAILED'), false);
    expect(r.subject.health().detail).toMatch(
      /^SIGNAL_READER_STOPPED: .*GROUP_AUTHORIZATION_FAILED.*; a new consumer in 1 s$/,
    );
    expect(r.consumers[0]?.disconnected).toBe(true);

    r.clock.advance(1_000);
    await settles(() => r.consumers.length === 2 && r.current().running, 'a new consumer');
    expect(r.subject.health().detail).toMatch(/; starting a new consumer$/);
    r.current().joined([0]);
    expect(r.current().seeks).toEqual([{ partition: 0, offset: '1' }]);
    expect(r.subject.health()).toEqual({ ok: true });
    await r.subject.stop();
    expect(r.current().disconnected).toBe(true);
  });

  it('lets kafkajs restart its consumer after a retriable crash while it reads, and not once it is stopping', async () => {
    const r = reader();
    await r.subject.start();
    const restartOnFailure = r.configs.at(-1)?.retry?.restartOnFailure;
    expect(restartOnFailure).toBeDefined();
    const crash = new Error('Closed connection');
    expect(await restartOnFailure?.(crash)).toBe(true);

    await r.subject.stop();
    expect(await restartOnFailure?.(crash)).toBe(false);
  });

  it('moves its position past a batch read in full, its transaction marker included, and not past one cut short', async () => {
    const r = reader();
    await r.subject.start();
    r.current().joined([0]);
    const record = (offset: string) => ({
      offset,
      value: encodeSignal({ ...signal, id: `0b5f3a52-6a53-4a5f-9c1e-2f4f0e3f4a1${offset}` }),
      key: Buffer.from(signalKey('c', `0b5f3a52-6a53-4a5f-9c1e-2f4f0e3f4a1${offset}`)),
    });
    // Offsets 0 and 1 in a transaction whose commit marker is offset 2.
    await r.current().batch(0, [record('0'), record('1')], '2');
    expect(r.subject.position(0)).toBe(3n);
    // A batch cut short after its first record (a seek after a rejoin): the rest is read again, so no further.
    await r.current().batch(0, [record('3'), record('4')], '5', 1);
    expect(r.subject.position(0)).toBe(4n);
    expect(r.entries).toHaveLength(3);
    // A batch of markers alone (an aborted transaction's end): past it.
    await r.current().batch(0, [], '9');
    expect(r.subject.position(0)).toBe(10n);
    await r.subject.stop();
  });
});
