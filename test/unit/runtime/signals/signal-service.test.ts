/**
 * openSignals: the signals channel opens in the background and never fails or holds up the start. A Kafka that
 * refuses it (a missing ACL) is reported and tried again after a backoff on the clock, until close.
 */
import type { Kafka } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../../src/config/load.js';
import {
  encodeOutcome,
  encodeSignal,
  outcomeKey,
  signalKey,
  type Signal,
  type SignalOutcome,
} from '../../../../src/kafka/signals/signal-model.js';
import { signalsTopicName } from '../../../../src/kafka/topics/topics.js';
import { silentLogger } from '../../../../src/logging/logger.js';
import { testMetrics } from '../../../support/metrics.js';
import { openSignals } from '../../../../src/runtime/signals/signal-service.js';
import { settles } from '../../../support/async.js';
import { ManualClock } from '../../../support/clock.js';
import { FakeConsumer } from '../../../support/fake-consumer.js';
import { protocolError } from '../../../support/kafka-errors.js';
import { MINIMAL_CONFIG } from '../../../support/minimal-config.js';

/** A kafkajs client whose every admin connection is refused as a principal without the ACLs is. */
function refusingKafka(): { kafka: Kafka; connects: () => number } {
  let connects = 0;
  const refused = Object.assign(new Error('Not authorized to access topics: [Topic authorization failed]'), {
    name: 'KafkaJSProtocolError',
    type: 'TOPIC_AUTHORIZATION_FAILED',
    retriable: false,
  });
  const admin = {
    connect: () => {
      connects += 1;
      return Promise.reject(refused);
    },
    disconnect: () => Promise.resolve(),
  };
  return { kafka: { admin: () => admin } as unknown as Kafka, connects: () => connects };
}

/**
 * A kafkajs client on which the offsets and signals topics exist (one partition, compacted, empty: the first read
 * needs no consumer) and whose reading consumers the test drives; `connect` answers each consumer's connect.
 */
function signalsKafka(
  offsetsTopic: string,
  connect: (consumerNumber: number) => Promise<void>,
  end: () => number = () => 0,
) {
  const consumers: FakeConsumer[] = [];
  const topic = signalsTopicName(offsetsTopic);
  const admin = {
    connect: () => Promise.resolve(),
    disconnect: () => Promise.resolve(),
    listTopics: () => Promise.resolve([offsetsTopic, topic]),
    fetchTopicMetadata: ({ topics }: { topics: string[] }) =>
      Promise.resolve({ topics: topics.map((name) => ({ name, partitions: [{ partitionId: 0 }] })) }),
    describeConfigs: () =>
      Promise.resolve({
        resources: [{ configEntries: [{ configName: 'cleanup.policy', configValue: 'compact' }] }],
      }),
    fetchTopicOffsets: () =>
      Promise.resolve([{ partition: 0, low: '0', high: String(end()), offset: String(end()) }]),
  };
  const producer = {
    connect: () => Promise.resolve(),
    disconnect: () => Promise.resolve(),
    send: () => Promise.resolve([{ baseOffset: String(end()) }]),
  };
  const kafka = {
    admin: () => admin,
    producer: () => producer,
    consumer: () => {
      const consumer = new FakeConsumer(topic);
      consumers.push(consumer);
      const number = consumers.length;
      consumer.connect = () => connect(number);
      return consumer;
    },
  } as unknown as Kafka;
  return { kafka, consumers };
}

const CONFIG = parseConfig(MINIMAL_CONFIG);

/** The signals of an instance that owns every partition, opened on `kafka` (the first wait 1 s, no jitter). */
function open(kafka: Kafka, clock: ManualClock) {
  return openSignals(kafka, {
    config: CONFIG,
    instance: 'i1',
    ownsPartition: () => true,
    configured: () => true,
    target: { runs: () => true, carryOut: () => undefined },
    metrics: testMetrics(),
    logger: silentLogger(),
    clock,
    retryBackoff: { initialDelayMs: 1_000, maxDelayMs: 60_000, multiplier: 2, jitter: 0 },
  });
}

/**
 * The signals of an instance that owns partition 0 while `state.owned` says so, opened on a topic whose end is
 * `state.end` (0 at the start: the first read needs no consumer), its reading consumer joined; records what its
 * locations are handed.
 */
async function openTakingOver() {
  const clock = new ManualClock(Date.parse('2026-01-01T00:00:00Z'));
  const state = { end: 0, owned: false };
  const { kafka, consumers } = signalsKafka(
    CONFIG.kafka.offsetsTopic,
    () => Promise.resolve(),
    () => state.end,
  );
  const carried: string[] = [];
  const signals = openSignals(kafka, {
    config: CONFIG,
    instance: 'i2',
    ownsPartition: () => state.owned,
    configured: () => true,
    target: { runs: () => true, carryOut: (s) => carried.push(s.id) },
    metrics: testMetrics(),
    logger: silentLogger(),
    clock,
  });
  await signals.ready();
  const consumer = consumers[0];
  if (consumer === undefined) throw new Error('no reading consumer');
  consumer.joined([0]);
  return { signals, consumer, state, carried };
}

async function settled(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
}

describe('openSignals', () => {
  it('returns at once when Kafka refuses the signals topic, says why, and tries again after a backoff until closed', async () => {
    const clock = new ManualClock(0);
    const { kafka, connects } = refusingKafka();
    const signals = open(kafka, clock);
    await settled();
    expect(connects()).toBe(1);
    expect(signals.health()).toMatchObject({ ok: false });
    expect(signals.health().detail).toMatch(
      /^SIGNALS_NOT_READ: the signals topic could not be read: .*again in 1 s$/,
    );
    expect(signals.status()).toEqual({
      pausedLocations: [],
      running: [],
      problem: expect.stringMatching(/^SIGNALS_NOT_READ: /) as string,
    });
    expect(signals.paused.isPaused('any')).toBe(false);

    clock.advance(1_000);
    await settled();
    expect(connects()).toBe(2);

    await signals.close();
    clock.advance(60_000);
    await settled();
    expect(connects()).toBe(2);
  });

  it('shows a reading consumer that cannot start in status().problem once open, until a new one joins', async () => {
    const clock = new ManualClock(0);
    const refused = protocolError('GROUP_AUTHORIZATION_FAILED');
    const { kafka, consumers } = signalsKafka(CONFIG.kafka.offsetsTopic, (n) =>
      n === 1 ? Promise.reject(refused) : Promise.resolve(),
    );
    const signals = open(kafka, clock);
    await settles(() => signals.status().problem !== undefined, 'a problem shown');
    expect(signals.status().problem).toMatch(
      /^SIGNAL_READER_STOPPED: .*GROUP_AUTHORIZATION_FAILED.*; a new consumer in 1 s$/,
    );
    // The channel opened (the topic read to its end): the consumer reading on is the reader's to restart.
    await signals.ready();
    expect(signals.health().ok).toBe(false);
    expect(consumers[0]?.disconnected).toBe(true);

    clock.advance(1_000);
    await settles(() => consumers.length === 2 && consumers[1]?.running === true, 'a new consumer');
    consumers[1]?.joined([0]);
    expect(signals.status()).toEqual({ pausedLocations: [], running: [] });
    expect(signals.health()).toEqual({ ok: true });

    await signals.close();
    expect(consumers[1]?.disconnected).toBe(true);
  });

  it('carries out the signals of a partition taken over only once it has read what the previous owner wrote there before', async () => {
    const { signals, consumer, state, carried } = await openTakingOver();
    const name = CONFIG.connector.name;
    const location = '00000000-0000-4000-8000-00000000000a';
    const sent = (n: number, kind: 'backfill' | 'reset'): Signal => ({
      id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
      kind,
      location,
      requestedAt: '2026-01-01T00:00:00Z',
      requestedBy: 'ops@host',
    });
    const signalRecord = (offset: number, signal: Signal) => ({
      offset: String(offset),
      key: Buffer.from(signalKey(name, signal.id)),
      value: encodeSignal(signal),
    });
    const outcomeRecord = (offset: number, signal: Signal, state: SignalOutcome['state']) => ({
      offset: String(offset),
      key: Buffer.from(outcomeKey(name, signal.id)),
      value: encodeOutcome({ signalId: signal.id, state, at: '2026-01-01T00:00:01Z', instance: 'i1' }),
    });
    // The previous owner accepted a backfill; this instance read it while it owned nothing.
    const backfill = sent(1, 'backfill');
    await consumer.batch(0, [signalRecord(0, backfill), outcomeRecord(1, backfill, 'accepted')], '1');
    // Then the previous owner finished it (its done with the page that merged its lane: offset 2, the
    // transaction's marker 3) and lost the partition to this instance, whose reader has not read the done yet.
    state.end = 4;
    state.owned = true;
    await signals.ownershipChanged();
    await settled();
    // The location's offset names only the last signal carried out there: handed to it now, the backfill could
    // be read again. It is not, while the partition is read up to the end it had at the handover.
    expect(carried).toEqual([]);
    expect(signals.answering(location)).toBe(false);

    await consumer.batch(0, [outcomeRecord(2, backfill, 'done')], '3');
    await settled();
    expect(signals.answering(location)).toBe(true);
    expect(signals.isOpen(backfill.id)).toBe(false);
    expect(carried).toEqual([]);

    // Caught up: a signal sent now is accepted and carried out here.
    const reset = sent(2, 'reset');
    state.end = 5;
    await consumer.batch(0, [signalRecord(4, reset)], '4');
    await settled();
    expect(carried).toEqual([reset.id]);
    await signals.close();
  });

  it('finds a partition it came to own without being told when a location of it asks for its signals, and carries them out once caught up', async () => {
    const { signals, consumer, state, carried } = await openTakingOver();
    const name = CONFIG.connector.name;
    const reset: Signal = {
      id: '00000000-0000-4000-8000-000000000003',
      kind: 'reset',
      location: '00000000-0000-4000-8000-00000000000a',
      requestedAt: '2026-01-01T00:00:00Z',
      requestedBy: 'ops@host',
    };
    const accepted: SignalOutcome = { signalId: reset.id, state: 'accepted', at: 't', instance: 'i1' };
    await consumer.batch(
      0,
      [
        { offset: '0', key: Buffer.from(signalKey(name, reset.id)), value: encodeSignal(reset) },
        { offset: '1', key: Buffer.from(outcomeKey(name, reset.id)), value: encodeOutcome(accepted) },
      ],
      '1',
    );
    state.end = 2;
    // A standby became the writer after its takeover's change was told: no ownershipChanged() now.
    state.owned = true;
    expect(signals.answering(reset.location)).toBe(false);
    await settled();
    expect(signals.answering(reset.location)).toBe(true);
    expect(carried).toEqual([reset.id]);
    await signals.close();
  });
});
