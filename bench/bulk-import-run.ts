/**
 * One run of the bulk-import bench (bench/bulk-import.ts), in a process of its own so that its peak RSS is
 * this run's alone (RSS never shrinks much once grown). Forked by that module with the run's settings as JSON
 * in argv; sends back its figures (BulkRunFigures) and exits.
 *
 * The run: a sandbox (child process) with one location whose history holds `size` calls at one instant
 * (data.sameInstantGroups) among `others` calls spread over a month, a hidden rate limit (429 past
 * `rps` requests/s per token, the connector told nothing), and `failRate` of the calls whose single-call
 * requests fail (503) for their first 10 attempts: past the client's 8 attempts, so the page holding such a
 * call fails once and is retried. The connector (default configuration but for the knobs named) starts with
 * nothing stored: the location splits, its history lane reads the group and merges. Then every record of
 * the calls topic is read back (read_committed) and compared with the sandbox's truth.
 */
import '../src/kafka/client/kafkajs-read-committed-fix.js';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { Kafka, logLevel } from 'kafkajs';
import { applyKafkajsIdleTimerFix } from '../src/kafka/client/kafkajs-idle-timer-fix.js';
import { readTopicToEnd } from '../src/kafka/topics/topic-reader.js';
import { silentLogger } from '../src/logging/logger.js';
import { ConnectorMetrics } from '../src/metrics/metrics.js';
import { ConnectorRuntime } from '../src/runtime/connector.js';
import { provideStack } from '../tools/devstack/stack-provider.js';
import { benchConfig } from './connector.js';
import { startSandboxChild } from './sandbox-child.js';

export interface BulkRunSettings {
  size: number;
  /** Calls besides the group, spread over the history. */
  others: number;
  /** The hidden limit, requests per second (burst the same). */
  rps: number;
  /** Share of calls whose single-call requests fail 10 times before they answer. */
  failRate: number;
  /** poll.boundaryCap; the offsets topic is created with a max.message.bytes that holds it. */
  boundaryCap: number;
  /** lanes.groupPieceSize. */
  pieceSize: number;
  timeoutS: number;
  /** The sandbox's port on 127.0.0.1; 0: any free one. */
  sandboxPort: number;
}

export interface BulkRunFigures {
  merged: boolean;
  seconds: number;
  peakRssMiB: number;
  peakHeapMiB: number;
  truth: number;
  lost: number;
  doubled: number;
  getRequests: number;
  listRequests: number;
  refused429: number;
  failed503: number;
}

const MIB = 2 ** 20;

async function run(settings: BulkRunSettings): Promise<BulkRunFigures> {
  const { size, others, rps, failRate, boundaryCap, pieceSize, timeoutS, sandboxPort } = settings;
  const stack = await provideStack(['environment', 'jvm']);
  const sandbox = await startSandboxChild(1, size + others, {
    port: sandboxPort,
    faults: {
      rateLimit: { requestsPerSecond: rps, burst: rps, per: 'token' },
      singleCallFailures: [
        {
          rate: failRate,
          attempts: 10,
          answer: { status: 503, body: '{"error":{"code":"unavailable"}}', contentType: 'application/json' },
        },
      ],
    },
    data: {
      sameInstantGroups: { count: 1, size },
      thirdPartyRatio: 0,
      unrepresentableRatio: 0,
    },
  });
  const name = `bench-bulk-${size}-${Date.now().toString(36)}`;
  applyKafkajsIdleTimerFix();
  const kafka = new Kafka({ clientId: name, brokers: stack.brokers, logLevel: logLevel.NOTHING });
  const registry = new SchemaRegistry({ host: stack.registryUrl });
  try {
    // An offsets topic whose records can hold a boundary of boundaryCap uids (about 160 bytes each, at most).
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({
      topics: [
        {
          topic: `${name}-offsets`,
          numPartitions: 3,
          configEntries: [
            { name: 'cleanup.policy', value: 'compact' },
            { name: 'max.message.bytes', value: String(Math.max(1_048_588, boundaryCap * 200 + 65_536)) },
          ],
        },
      ],
    });
    await admin.disconnect();
    const config = benchConfig({
      run: name,
      sandbox: sandbox.ready,
      caFile: sandbox.caFile,
      stack,
      poll: { intervalMs: 5_000, boundaryCap },
      lanes: { groupPieceSize: pieceSize },
    });
    const runtime = await ConnectorRuntime.start({
      config,
      logger: silentLogger(),
      metrics: new ConnectorMetrics({ perLocationLabels: false }),
    });
    let peakRss = 0;
    let peakHeap = 0;
    const sample = (): void => {
      const usage = process.memoryUsage();
      peakRss = Math.max(peakRss, usage.rss);
      peakHeap = Math.max(peakHeap, usage.heapUsed);
    };
    const sampler = setInterval(sample, 100);
    const stop = new AbortController();
    const started = performance.now();
    const running = runtime.run(stop.signal);
    const deadline = Date.now() + timeoutS * 1000;
    const merged = (): boolean =>
      runtime.status().every((l) => l.backfill === null && l.totals.traversalsCompleted >= 1);
    while (!merged() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
    const seconds = (performance.now() - started) / 1000;
    const done = merged();
    stop.abort();
    await running;
    clearInterval(sampler);
    sample();
    await runtime.close();

    const truth = new Set(await sandbox.truth());
    const versions = new Set<string>();
    let records = 0;
    const values: Buffer[] = [];
    await readTopicToEnd(kafka, { topic: name, groupIdPrefix: `${name}-check`, timeoutMs: 120_000 }, (r) => {
      if (r.value !== null) values.push(r.value);
    });
    for (const value of values) {
      const call = (await registry.decode(value)) as { uid: string; updatedAtIso: string };
      versions.add(`${call.uid}@${new Date(call.updatedAtIso).toISOString()}`);
      records += 1;
    }
    const stats = await sandbox.stats();
    return {
      merged: done,
      seconds,
      peakRssMiB: peakRss / MIB,
      peakHeapMiB: peakHeap / MIB,
      truth: truth.size,
      lost: [...truth].filter((v) => !versions.has(v)).length,
      doubled: records - versions.size,
      getRequests: stats.getRequests,
      listRequests: stats.listRequests,
      refused429: stats.byStatus['429'] ?? 0,
      failed503: stats.byStatus['503'] ?? 0,
    };
  } finally {
    await sandbox.close();
    await stack.stop();
  }
}

const settings = JSON.parse(process.argv[2] ?? '{}') as BulkRunSettings;
run(settings).then(
  (figures) => {
    process.send?.(figures, () => process.exit(0));
  },
  (error: unknown) => {
    process.stderr.write(
      `bulk-import run: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  },
);
