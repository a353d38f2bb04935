/**
 * Freshness (issue 15 point 5): with live updates and creations in the sandbox, the delay from a change
 * (its updatedAt, the sandbox's clock, which is this machine's wall clock) to its record being readable
 * in Kafka by a read_committed consumer (the consumer's wall clock when it receives the record: an upper
 * bound of the commit time, by the consumer's fetch wait of at most 100 ms). p50 and p99 against the poll
 * interval; goal p99 <= interval + 1 s at 100 locations.
 *
 * One connector runs through REPETITIONS consecutive windows; a change belongs to the window its updatedAt
 * falls in, and the run waits one interval and some seconds after the last window so that every change
 * can arrive (a change never received counts as missing).
 *
 * Knobs (env): BENCH_FRESH_LOCATIONS (100), BENCH_FRESH_INTERVAL_MS (10000), BENCH_FRESH_WINDOW_S (20),
 * BENCH_FRESH_UPDATES (updates/s, 2), BENCH_FRESH_CREATES (creations/s, 1), BENCH_FRESH_RPS (20).
 */
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { Kafka, logLevel } from 'kafkajs';
import { applyKafkajsIdleTimerFix } from '../src/kafka/kafkajs-idle-timer-fix.js';
import { provideStack } from '../tools/devstack/stack-provider.js';
import { silentLogger } from '../src/logging/logger.js';
import { ConnectorMetrics } from '../src/metrics/metrics.js';
import { ConnectorRuntime } from '../src/runtime/connector.js';
import { benchConfig } from './connector.js';
import { startSandboxChild } from './sandbox-child.js';
import { envInt, median, REPETITIONS, Samples } from './stats.js';
import type { BenchModule, BenchResult } from './types.js';

interface Arrival {
  updatedAtMs: number;
  receivedAtMs: number;
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted.length === 0
    ? Number.NaN
    : (sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? Number.NaN);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export const freshnessBench: BenchModule = {
  name: 'freshness',
  async run(): Promise<BenchResult> {
    const locations = envInt('BENCH_FRESH_LOCATIONS', 100);
    const intervalMs = envInt('BENCH_FRESH_INTERVAL_MS', 10_000);
    const windowS = envInt('BENCH_FRESH_WINDOW_S', 20);
    const updates = envInt('BENCH_FRESH_UPDATES', 2);
    const creates = envInt('BENCH_FRESH_CREATES', 1);
    const rps = envInt('BENCH_FRESH_RPS', 20);
    const stack = await provideStack(['environment', 'jvm']);
    const sandbox = await startSandboxChild(locations, 5, {
      live: { updatesPerSecond: updates, createsPerSecond: creates },
    });
    const run = `bench-fresh-${Date.now().toString(36)}`;
    // The bench's own clients too: unpatched kafkajs printed TimeoutNegativeWarning (src/kafka/kafkajs-idle-timer-fix.ts).
    applyKafkajsIdleTimerFix();
    const kafka = new Kafka({ clientId: run, brokers: stack.brokers, logLevel: logLevel.NOTHING });
    const registry = new SchemaRegistry({ host: stack.registryUrl });
    const arrivals = new Map<string, Arrival>();
    const consumer = kafka.consumer({ groupId: `${run}-reader`, maxWaitTimeInMs: 100 });
    const s = new Samples();
    let changes = 0;
    let made = 0;
    try {
      const config = benchConfig({
        run,
        sandbox: sandbox.ready,
        caFile: sandbox.caFile,
        stack,
        api: { requestsPerSecond: rps, enrich: true },
        poll: { intervalMs },
      });
      const runtime = await ConnectorRuntime.start({
        config,
        logger: silentLogger(),
        metrics: new ConnectorMetrics({ perLocationLabels: false }),
      });
      const stop = new AbortController();
      const running = runtime.run(stop.signal);
      while (runtime.status().some((l) => l.totals.traversalsCompleted < 1)) await sleep(200);
      await consumer.connect();
      await consumer.subscribe({ topic: run, fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ message }) => {
          const receivedAtMs = Date.now();
          if (message.value === null) return;
          const value = (await registry.decode(message.value)) as { uid: string; updatedAtIso: string };
          arrivals.set(`${value.uid}@${value.updatedAtIso}`, {
            updatedAtMs: Date.parse(value.updatedAtIso),
            receivedAtMs,
          });
        },
      });
      const start = Date.now();
      await sleep(REPETITIONS * windowS * 1000 + intervalMs + 5_000);
      stop.abort();
      await running;
      await runtime.close();
      for (let rep = 0; rep < REPETITIONS; rep++) {
        const from = start + rep * windowS * 1000;
        const to = from + windowS * 1000;
        const delays = [...arrivals.values()]
          .filter((a) => a.updatedAtMs >= from && a.updatedAtMs < to)
          .map((a) => (a.receivedAtMs - a.updatedAtMs) / 1000)
          .sort((a, b) => a - b);
        changes += delays.length;
        s.add('delay p50 (change to read_committed)', 's', percentile(delays, 0.5));
        s.add('delay p99', 's', percentile(delays, 0.99));
        s.add('delay max', 's', delays.at(-1) ?? Number.NaN);
        s.add('changes received in the window', 'records', delays.length);
        s.add(
          'p99 / (interval + 1 s) (goal <= 1)',
          'ratio',
          percentile(delays, 0.99) / (intervalMs / 1000 + 1),
        );
      }
      const stats = await sandbox.stats();
      made = stats.live.updates + stats.live.creates;
    } finally {
      await consumer.disconnect().catch(() => undefined);
      await sandbox.close();
      await stack.stop();
    }
    return {
      name: `freshness: ${locations} locations, ${intervalMs / 1000} s poll interval, live changes`,
      figures: s.figures(),
      notes: [
        `${locations} locations, api.requestsPerSecond ${rps}, exactly-once, enrichment on; the sandbox (child process) changes ${updates} call(s)/s and creates ${creates}/s throughout.`,
        `${REPETITIONS} consecutive windows of ${windowS} s after the first round, then ${(intervalMs / 1000 + 5).toFixed(0)} s for the last changes to arrive; ${changes} changes received from the windows (median ${median(s.values('changes received in the window'))} per window, ${updates + creates}/s × ${windowS} s made); ${made} live changes made over the whole run (first round and tail included).`,
        'Delay = wall clock of a read_committed consumer receiving the record − the record updatedAt (the sandbox writes its wall clock): an upper bound of the delay to the commit.',
      ],
    };
  },
};
