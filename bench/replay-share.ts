/**
 * The shared replay window's race (issue 40, distributed mode): how long after a delivery's 2xx another instance
 * knows its replay key. The receiving instance writes the delivery's nudges with its replay key to the nudge
 * topic (kafka/nudges/nudge-topic.ts) and answers once they are durable; every instance's nudge reader enters
 * the key into its replay window as it reads it. A replay reaching another instance before that is taken again;
 * this measures the gap: from the write resolving (the 2xx) to each other reader handing the key on, for a
 * delivery naming one location (the key in the nudge) and one naming locations of two partitions (the key in a
 * record of its own, written after the nudges: the 2xx waits for it), and what the write before the 2xx takes.
 *
 * The real nudge topic writer and readers (`kafkaNudgeReader`, each in a consumer group of its own, as each
 * instance's is) on the stack's broker, in this process. Deliveries are written one at a time, BENCH_SHARE_GAP_MS
 * apart; the chaos suite's judge allows `SHARED_REPLAY_BOUND_MS` (1 s) before a replay taken elsewhere is a
 * violation.
 *
 * Knobs (env): BENCH_SHARE_DELIVERIES (200 per repetition and shape), BENCH_SHARE_READERS (2: the other
 * instances), BENCH_SHARE_GAP_MS (20).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Kafka, logLevel } from 'kafkajs';
import { applyKafkajsIdleTimerFix } from '../src/kafka/client/kafkajs-idle-timer-fix.js';
import { keyPartition } from '../src/kafka/group/location-partition.js';
import { kafkaNudgeReader, type NudgeTopicReader } from '../src/kafka/nudges/nudge-reader.js';
import { ensureNudgeTopic, NudgeTopicWriter } from '../src/kafka/nudges/nudge-topic.js';
import { offsetKey } from '../src/kafka/offsets/offset-codec.js';
import { silentLogger } from '../src/logging/logger.js';
import { systemClock } from '../src/time/clock.js';
import { provideStack } from '../tools/devstack/stack-provider.js';
import { atMost, envInt, percentile, REPETITIONS, Samples } from './stats.js';
import type { BenchModule, BenchResult } from './types.js';

const PARTITIONS = 4;
const CONNECTOR = 'replay-share';

/** Two locations whose nudges go to different partitions. */
function spreadLocations(): [string, string] {
  const byPartition = new Map<number, string>();
  for (let n = 0; byPartition.size < 2; n++)
    byPartition.set(keyPartition(offsetKey(CONNECTOR, `L${n}`), PARTITIONS), `L${n}`);
  return [...byPartition.values()] as [string, string];
}

async function waitFor(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(1);
  }
}

export const replayShareBench: BenchModule = {
  name: 'replay-share',
  async run(): Promise<BenchResult> {
    const deliveries = envInt('BENCH_SHARE_DELIVERIES', 200);
    const readerCount = envInt('BENCH_SHARE_READERS', 2);
    const gapMs = envInt('BENCH_SHARE_GAP_MS', 20);
    applyKafkajsIdleTimerFix();
    const stack = await provideStack(['environment', 'jvm']);
    const kafka = new Kafka({ clientId: CONNECTOR, brokers: stack.brokers, logLevel: logLevel.NOTHING });
    const samples = new Samples();
    const run = `${CONNECTOR}-${Date.now()}`;
    const topic = `${run}-nudges`;
    const readers: NudgeTopicReader[] = [];
    const writer = new NudgeTopicWriter(kafka, {
      topic,
      connectorName: CONNECTOR,
      partitionCount: PARTITIONS,
    });
    /** `<reader>/<key>` -> when that reader handed the key on (performance.now()). */
    const seen = new Map<string, number>();
    try {
      await ensureNudgeTopic(kafka, { topic, partitions: PARTITIONS, replicationFactor: 1, create: true });
      await writer.connect();
      for (let i = 0; i < readerCount; i++) {
        const reader = kafkaNudgeReader(kafka, {
          topic,
          groupId: `${run}-${i}`,
          startAtMs: Date.now(),
          each: () => undefined,
          replayKeys: ({ key }) => {
            if (!seen.has(`${i}/${key}`)) seen.set(`${i}/${key}`, performance.now());
          },
          clock: systemClock,
          logger: silentLogger(),
        });
        await reader.start();
        readers.push(reader);
      }
      const readBy = (key: string) => readers.every((_, i) => seen.has(`${i}/${key}`));
      const [a, b] = spreadLocations();
      // Every reader joined and reading.
      for (let w = 0; !readBy(`warm-${w - 1}`); w++) {
        await writer.write([{ location: a, uid: 'warm', event: 'call.updated' }], {
          key: `warm-${w}`,
          atMs: Date.now(),
        });
        await sleep(200);
      }
      const shapes = [
        { label: 'one partition (the key in the nudge)', locations: [a] },
        { label: 'two partitions (a key record after the nudges)', locations: [a, b] },
      ];
      for (let r = 0; r < REPETITIONS; r++)
        for (const shape of shapes) {
          const gaps: number[] = [];
          const writes: number[] = [];
          for (let d = 0; d < deliveries; d++) {
            const key = `id:${run}-${r}-${shape.locations.length}-${d}`;
            const writeStart = performance.now();
            await writer.write(
              shape.locations.map((location) => ({ location, uid: key, event: 'call.updated' })),
              { key, atMs: Date.now() },
            );
            const answeredAt = performance.now();
            writes.push(answeredAt - writeStart);
            await waitFor(() => readBy(key), 30_000, `the key ${key} read by every reader`);
            for (let i = 0; i < readers.length; i++) gaps.push((seen.get(`${i}/${key}`) ?? NaN) - answeredAt);
            await sleep(gapMs);
          }
          gaps.sort((x, y) => x - y);
          writes.sort((x, y) => x - y);
          samples.add(`${shape.label}: the write before the 2xx, p50`, 'ms', percentile(writes, 0.5));
          samples.add(`${shape.label}: 2xx to key read, p50`, 'ms', percentile(gaps, 0.5));
          samples.add(`${shape.label}: 2xx to key read, p99`, 'ms', percentile(gaps, 0.99));
          samples.add(`${shape.label}: 2xx to key read, max`, 'ms', gaps.at(-1) ?? NaN);
        }
    } finally {
      for (const reader of readers) await reader.stop();
      await writer.disconnect().catch(() => undefined);
      const admin = kafka.admin();
      await admin.connect();
      await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
      await admin.disconnect();
      await stack.stop();
    }
    return {
      name: 'replay-share',
      figures: samples.figures(),
      notes: [
        `${deliveries} deliveries per repetition and shape, ${gapMs} ms apart, one writer and ${readerCount} readers (the other instances, each its own consumer group) in this process, on ${stack.description}; a topic of ${PARTITIONS} partitions.`,
        'A negative gap: the reader had the key before the write’s acknowledgement came back to the writer.',
      ],
      goals: [
        atMost(
          'shared replay window: another instance knows a delivery within the chaos bound (1 s) of its 2xx',
          'one partition (the key in the nudge): 2xx to key read, p99',
          1_000,
        ),
      ],
    };
  },
};
