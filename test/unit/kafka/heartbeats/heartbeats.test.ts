/** When heartbeats are sent: every interval on the injected clock, none after stop. (The records are in test/integration/kafka.) */
import type { ProducerRecord, RecordMetadata } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { HeartbeatPublisher, type HeartbeatProducer } from '../../../../src/kafka/heartbeats/heartbeats.js';
import { silentLogger } from '../../../../src/logging/logger.js';
import { testMetrics } from '../../../support/metrics.js';
import { ManualClock } from '../../../support/clock.js';
import { locationStatus } from '../../../support/sync/location-status.js';

const LOCATION = locationStatus();

/** A producer that records the time (on `clock`) of each send; `send` waits for `answer` when set. */
function recordingKafka(clock: ManualClock) {
  const sentAt: number[] = [];
  const sendListeners: (() => void)[] = [];
  const kafka = {
    /** Resolves at the next send. */
    nextSend: () => new Promise<void>((resolve) => sendListeners.push(resolve)),
    answer: undefined as Promise<void> | undefined,
    disconnected: false,
    producer(): HeartbeatProducer {
      return {
        connect: async () => undefined,
        disconnect: async () => {
          kafka.disconnected = true;
        },
        send: async (_record: ProducerRecord): Promise<RecordMetadata[]> => {
          sentAt.push(clock.now());
          for (const listener of sendListeners.splice(0)) listener();
          await kafka.answer;
          return [];
        },
      };
    },
  };
  return { kafka, sentAt };
}

function publisher(clock: ManualClock, kafka: ReturnType<typeof recordingKafka>['kafka']) {
  return new HeartbeatPublisher({
    kafka,
    topic: 'heartbeats',
    intervalMs: 1_000,
    connectorName: 'hb',
    locations: () => [LOCATION],
    metrics: testMetrics(),
    logger: silentLogger(),
    clock,
  });
}

describe('HeartbeatPublisher timing', () => {
  it('beats once per interval of its clock and stops beating at stop', async () => {
    const clock = new ManualClock();
    const { kafka, sentAt } = recordingKafka(clock);
    const heartbeats = publisher(clock, kafka);
    await heartbeats.start();

    for (let beat = 0; beat < 3; beat += 1) {
      await clock.sleeping();
      clock.advance(1_000);
    }
    await clock.sleeping();
    await heartbeats.stop();
    clock.advance(5_000);

    expect(sentAt).toEqual([1_000, 2_000, 3_000]);
    expect(kafka.disconnected).toBe(true);
    expect(clock.pending).toBe(0);
  });

  it('skips the beat that falls due while a send is still in flight, keeping to the interval', async () => {
    const clock = new ManualClock();
    const { kafka, sentAt } = recordingKafka(clock);
    const heartbeats = publisher(clock, kafka);
    await heartbeats.start();
    let answer: () => void = () => undefined;
    kafka.answer = new Promise<void>((resolve) => (answer = resolve));

    await clock.sleeping();
    const hanging = kafka.nextSend();
    clock.advance(1_000); // the beat at 1 s hangs
    await hanging;
    clock.advance(1_500); // past the 2 s beat
    kafka.answer = undefined;
    answer();
    await clock.sleeping();
    clock.advance(500); // 3 s
    await clock.sleeping();
    await heartbeats.stop();

    expect(sentAt).toEqual([1_000, 3_000]);
  });
});
