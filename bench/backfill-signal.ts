/**
 * A backfill signal under a hidden rate limit (issue 42's goal): one location with a large history, caught up,
 * is sent `backfill` (its whole history again) while the sandbox keeps changing its calls under a limit the API
 * does not announce (a token bucket, 429 with Retry-After). The owner reads the range again as a history lane
 * beside the live one (src/sync/location/signal-steps-rule.ts).
 *
 * Figures, per window (REPETITIONS windows of the re-read):
 * - live freshness during the re-read: the delay from a change (its updatedAt, the sandbox's wall clock) to a
 *   read_committed consumer receiving it; goal p99 <= the effective interval + 5 s, where the effective interval
 *   is the larger of poll.intervalMs and one location / (the limit x the live share, 1 - backfillShare);
 * - the re-read: its duration, the requests answered per second during it, and the history lane's rate (less
 *   the live polls' rate once it is over) over what the limit leaves the history share; the records carrying
 *   the signal's header (every call once, exactly once).
 *
 * Knobs (env): BENCH_BF_CALLS (history of the location, 1,000; the goal names 10,000), BENCH_BF_LIMIT
 * (the hidden limit, 20 req/s), BENCH_BF_INTERVAL_MS (poll.intervalMs, 5,000), BENCH_BF_UPDATES (changes/s to
 * the location, 1).
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { Kafka, logLevel } from 'kafkajs';
import { applyKafkajsIdleTimerFix } from '../src/kafka/client/kafkajs-idle-timer-fix.js';
import { SignalTopicWriter } from '../src/kafka/signals/signal-topic.js';
import { signalsTopicName } from '../src/kafka/topics/topics.js';
import { silentLogger } from '../src/logging/logger.js';
import { ConnectorMetrics } from '../src/metrics/metrics.js';
import { ConnectorRuntime } from '../src/runtime/connector.js';
import { provideStack } from '../tools/devstack/stack-provider.js';
import { benchConfig } from './connector.js';
import { p99Between, readFirstArrivals, requestsSoFar, type Arrival } from './lanes.js';
import { startSandboxChild } from './sandbox-child.js';
import { atMost, envInt, REPETITIONS, Samples } from './stats.js';
import type { BenchModule, BenchResult } from './types.js';

/** api.rateLimit.backfillShare's default: the share of the budget history gets while live wants the rest. */
const BACKFILL_SHARE = 0.25;

export const backfillSignalBench: BenchModule = {
  name: 'backfill-signal',
  async run(): Promise<BenchResult> {
    const calls = envInt('BENCH_BF_CALLS', 1_000);
    const limit = envInt('BENCH_BF_LIMIT', 20);
    const intervalMs = envInt('BENCH_BF_INTERVAL_MS', 5_000);
    const updates = envInt('BENCH_BF_UPDATES', 1);
    const stack = await provideStack(['environment', 'jvm']);
    const sandbox = await startSandboxChild(1, calls, {
      faults: { rateLimit: { requestsPerSecond: limit, burst: limit, per: 'token', headers: false } },
      live: { updatesPerSecond: updates, createsPerSecond: 0 },
      data: { sameInstantGroups: { count: 0, size: 0 } },
    });
    const run = `bench-bf-${Date.now().toString(36)}`;
    applyKafkajsIdleTimerFix();
    const kafka = new Kafka({ clientId: run, brokers: stack.brokers, logLevel: logLevel.NOTHING });
    const registry = new SchemaRegistry({ host: stack.registryUrl });
    const consumer = kafka.consumer({ groupId: `${run}-reader`, maxWaitTimeInMs: 100 });
    /** By `uid@updatedAt`: the first arrival of each version, and how many records re-read it. */
    const arrivals = new Map<string, Arrival>();
    const reRead = new Map<string, number>();
    const s = new Samples();
    const notes: string[] = [];
    let writer: SignalTopicWriter | undefined;
    try {
      const config = benchConfig({
        run,
        sandbox: sandbox.ready,
        caFile: sandbox.caFile,
        stack,
        // The default configuration's budget (the connector learns the hidden limit), enrichment on.
        api: { enrich: true, rateLimit: { backfillShare: BACKFILL_SHARE } },
        poll: { intervalMs },
      });
      const runtime = await ConnectorRuntime.start({
        config,
        logger: silentLogger(),
        metrics: new ConnectorMetrics({ perLocationLabels: false }),
      });
      await consumer.connect();
      await consumer.subscribe({ topic: run, fromBeginning: true });
      const stop = new AbortController();
      const running = runtime.run(stop.signal);
      await readFirstArrivals(consumer, registry, arrivals, (version) =>
        reRead.set(version, (reRead.get(version) ?? 0) + 1),
      );
      // Caught up: the first traversal done and the first split's history merged.
      const caughtUp = () =>
        runtime.status().every((l) => l.totals.traversalsCompleted >= 1 && l.backfill === null);
      while (!caughtUp()) await sleep(200);
      await sleep(intervalMs);

      const location = sandbox.ready.locations[0] ?? '';
      const partitionCount = (await kafka.admin().fetchTopicMetadata({ topics: [`${run}-offsets`] }))
        .topics[0]?.partitions.length;
      writer = await SignalTopicWriter.connect(kafka, {
        topic: signalsTopicName(`${run}-offsets`),
        connectorName: run,
        partitionCount: partitionCount ?? 1,
      });
      const requests = () => requestsSoFar(sandbox);
      const id = randomUUID();
      const sentAt = Date.now();
      const requestsAtSend = await requests();
      await writer.send({
        id,
        kind: 'backfill',
        location,
        requestedAt: new Date(sentAt).toISOString(),
        requestedBy: 'bench',
      });
      while (!runtime.status().some((l) => l.backfill !== null)) await sleep(50);
      const startedAt = Date.now();
      while (runtime.status().some((l) => l.backfill !== null)) await sleep(100);
      const mergedAt = Date.now();
      const requestsDuring = (await requests()) - requestsAtSend;
      // The live polls alone, once the re-read is over.
      await sleep(intervalMs);
      const liveFrom = Date.now();
      const liveRequests0 = await requests();
      await sleep(3 * intervalMs);
      const liveRate = ((await requests()) - liveRequests0) / ((Date.now() - liveFrom) / 1000);
      await sleep(intervalMs + 5_000); // the last changes arrive
      stop.abort();
      await running;
      await runtime.close();

      const span = (mergedAt - startedAt) / REPETITIONS;
      for (let rep = 0; rep < REPETITIONS; rep++) {
        const from = startedAt + rep * span;
        const window = p99Between(arrivals, from, from + span);
        s.add('live freshness p99 during the re-read', 's', window.p99);
        s.add('changes in the window', 'records', window.count);
      }
      const seconds = (mergedAt - sentAt) / 1000;
      const historyRate = requestsDuring / seconds - liveRate;
      const effectiveIntervalS = Math.max(intervalMs / 1000, 1 / (limit * (1 - BACKFILL_SHARE)));
      s.add('re-read duration (signal sent to lanes merged)', 's', seconds);
      s.add('requests answered per second during the re-read', 'req/s', requestsDuring / seconds);
      s.add('history rate / the limit (history share alone: 0.25)', 'ratio', historyRate / limit);
      s.add(
        'records re-read (carrying the signal)',
        'records',
        [...reRead.values()].reduce((a, b) => a + b, 0),
      );
      s.add('versions re-read more than once', 'records', [...reRead.values()].filter((n) => n > 1).length);
      s.add('effective interval + 5 s (the goal)', 's', effectiveIntervalS + 5);
      notes.push(
        `1 location × ${calls} calls (distinct instants), enrichment on (one GET per call), a hidden limit of ${limit} req/s (429 with Retry-After, not announced), the connector's default budget (it learns the limit), poll.intervalMs ${intervalMs}, api.rateLimit.backfillShare ${BACKFILL_SHARE}, exactly-once; the sandbox changes ${updates} call(s)/s of the location throughout.`,
        `The backfill (its whole history, since and until unset) was sent after the location caught up; its history lane started ${((startedAt - sentAt) / 1000).toFixed(1)} s after the send (at the location's next page) and merged ${((mergedAt - startedAt) / 1000).toFixed(1)} s later. Live windows: ${REPETITIONS} × ${(span / 1000).toFixed(1)} s of the re-read.`,
        'Records re-read: the calls the listing returns (the sandbox keeps some calls of third parties or unrepresentable, which it never lists), each once.',
        `The history lane borrows what live leaves unused: with one location the live polls need ${liveRate.toFixed(1)} req/s, so history may run far above its 0.25 share.`,
      );
    } finally {
      await writer?.disconnect().catch(() => undefined);
      await consumer.disconnect().catch(() => undefined);
      await sandbox.close();
      await stack.stop();
    }
    const goal = s.figures().find((f) => f.label === 'effective interval + 5 s (the goal)')?.value ?? 10;
    return {
      name: `backfill signal: ${calls} calls re-read under a hidden ${limit} req/s`,
      figures: s.figures(),
      goals: [
        atMost(
          'backfill signal: live freshness p99 during the re-read <= the effective interval + 5 s',
          'live freshness p99 during the re-read',
          goal,
        ),
        atMost('backfill signal: no version re-read twice', 'versions re-read more than once', 0),
      ],
      notes,
    };
  },
};
