/**
 * End-to-end throughput and memory of the connector: a full backfill from the sandbox (in a worker thread,
 * its own event loop) into the real Kafka + schema registry of the dev stack, in three modes: exactly-once
 * with enrichment (the default), at-least-once with enrichment, exactly-once without enrichment.
 *
 * Figures: records/s for the whole backfill (first request to the last traversal's commit), API requests/s,
 * peak RSS and peak heap of the connector process during the run (sampled every 100 ms), and the heap left
 * after the run (a leak check across runs). Bounded: each run stops at its end or after 5 minutes.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { parseConfig } from '../src/config/load.js';
import type { ConnectorConfig } from '../src/config/schema.js';
import { provideStack, type DevStack } from '../tools/devstack/stack-provider.js';
import { silentLogger } from '../src/logging/logger.js';
import { ConnectorMetrics } from '../src/metrics/metrics.js';
import { ConnectorRuntime } from '../src/runtime/connector.js';
import type { WorkerReady } from './sandbox-worker.js';
import type { BenchFigure, BenchModule } from './types.js';

const LOCATIONS = 10;
const CALLS_PER_LOCATION = 2_000;
const RUN_LIMIT_MS = 5 * 60_000;

export interface Mode {
  label: string;
  exactlyOnce: boolean;
  enrich: boolean;
}

const modes: Mode[] = [
  { label: 'exactly-once, enriched', exactlyOnce: true, enrich: true },
  { label: 'at-least-once, enriched', exactlyOnce: false, enrich: true },
  { label: 'exactly-once, not enriched', exactlyOnce: true, enrich: false },
];

export async function startSandboxWorker(
  locations = LOCATIONS,
  calls = CALLS_PER_LOCATION,
): Promise<{ ready: WorkerReady; close: () => Promise<void> }> {
  const worker = new Worker(new URL('./sandbox-worker.js', import.meta.url), {
    workerData: { locations, calls },
  });
  const ready = await new Promise<WorkerReady>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  return {
    ready,
    close: async () => {
      worker.postMessage('close');
      await new Promise((resolve) => worker.once('exit', resolve));
    },
  };
}

/**
 * How the connector runs in the benchmarks: `single` (one instance, the only mode built so far). The hook
 * for the distributed mode of issue 14: BENCH_CONNECTOR_MODE=distributed passes `connector.mode:
 * distributed` to the config, which the config schema refuses until that mode exists.
 */
export const CONNECTOR_MODE = process.env['BENCH_CONNECTOR_MODE'] ?? 'single';

/** Settings a benchmark changes from the backfill's defaults (no rate limit, every location in flight). */
export interface BackfillTuning {
  api?: Record<string, unknown>;
  poll?: Record<string, unknown>;
}

/** What benchConfig and benchDocument take: the run, its sandbox and stack, and sections to add or override. */
export interface BenchConfigOptions {
  run: string;
  sandbox: { baseUrl: string; accessToken: string; locations: string[] };
  caFile: string;
  stack: DevStack;
  connector?: Record<string, unknown>;
  api?: Record<string, unknown>;
  kafka?: Record<string, unknown>;
  poll?: Record<string, unknown>;
  metrics?: Record<string, unknown>;
  logging?: Record<string, unknown>;
  lanes?: Record<string, unknown>;
}

/**
 * The connector's configuration document for one bench run against the sandbox and the dev stack: its own
 * topics (named after `run`), a static token, exactly-once unless told, no metrics server; the optional
 * sections add to or override the defaults. Every bench module that runs the connector builds its config
 * here: in-process through benchConfig, or as the file a CLI process reads (bench/distributed.ts).
 */
export function benchDocument(options: BenchConfigOptions): Record<string, unknown> {
  const { run, sandbox, stack } = options;
  return {
    connector: {
      name: run,
      ...(CONNECTOR_MODE === 'single' ? {} : { mode: CONNECTOR_MODE }),
      ...options.connector,
    },
    api: { baseUrl: sandbox.baseUrl, caFile: options.caFile, pageSize: 100, ...options.api },
    auth: { staticToken: sandbox.accessToken },
    sources: [{ locations: sandbox.locations }],
    kafka: {
      brokers: stack.brokers,
      topic: run,
      offsetsTopic: `${run}-offsets`,
      dlqTopic: `${run}-dlq`,
      topicPartitions: 6,
      exactlyOnce: true,
      ...options.kafka,
    },
    schemaRegistry: { url: stack.registryUrl },
    ...(options.poll && { poll: options.poll }),
    metrics: { enabled: false, ...options.metrics },
    ...(options.logging && { logging: options.logging }),
    ...(options.lanes && { lanes: options.lanes }),
  };
}

/** benchDocument, parsed and validated as the connector does. */
export function benchConfig(options: BenchConfigOptions): ConnectorConfig {
  return parseConfig(benchDocument(options), {});
}

export async function backfill(
  mode: Mode,
  sandbox: WorkerReady,
  caFile: string,
  stack: DevStack,
  tuning: BackfillTuning = {},
): Promise<BenchFigure[]> {
  const run = `bench-${Date.now().toString(36)}`;
  const config = benchConfig({
    run,
    sandbox,
    caFile,
    stack,
    api: {
      requestsPerSecond: 100_000,
      maxConcurrency: 64,
      enrich: mode.enrich,
      enrichConcurrency: 32,
      ...tuning.api,
    },
    kafka: { exactlyOnce: mode.exactlyOnce },
    poll: { intervalMs: 3_600_000, maxLocationsInFlight: sandbox.locations.length, ...tuning.poll },
  });
  const metrics = new ConnectorMetrics({ perLocationLabels: true });
  const runtime = await ConnectorRuntime.start({ config, logger: silentLogger(), metrics });
  let peakRss = 0;
  let peakHeap = 0;
  const sample = () => {
    const usage = process.memoryUsage();
    peakRss = Math.max(peakRss, usage.rss);
    peakHeap = Math.max(peakHeap, usage.heapUsed);
  };
  const sampler = setInterval(sample, 100);
  const stop = new AbortController();
  const cpu0 = process.cpuUsage();
  const started = performance.now();
  const running = runtime.run(stop.signal);
  const deadline = Date.now() + RUN_LIMIT_MS;
  while (runtime.status().some((s) => s.totals.traversalsCompleted < 1) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpu0);
  stop.abort();
  await running;
  clearInterval(sampler);
  sample();
  const published = runtime.status().reduce((n, s) => n + s.totals.published, 0);
  const requests = (await metrics.apiRequestDuration.get()).values
    .filter((v) => v.metricName?.endsWith('_count'))
    .reduce((n, v) => n + v.value, 0);
  await runtime.close();
  if (runtime.status().some((s) => s.totals.traversalsCompleted < 1))
    throw new Error(`${mode.label}: the backfill did not finish within ${RUN_LIMIT_MS / 1000} s`);
  // Read once the closed clients' sockets and timers have settled, after two collections. (A growth of this
  // figure across runs, 83 → 127 → 140 MiB, was seen once; five successive backfills of 20,000 calls in one
  // process now stay at 31-43 MiB, read at once or after this settle: no retained object of ours.)
  await new Promise((resolve) => setTimeout(resolve, 500));
  global.gc?.();
  global.gc?.();
  return [
    { label: `${mode.label}: records published`, value: published, unit: 'records' },
    { label: `${mode.label}: backfill throughput`, value: published / seconds, unit: 'records/s' },
    { label: `${mode.label}: API requests`, value: requests / seconds, unit: 'req/s' },
    { label: `${mode.label}: CPU time`, value: (cpu.user + cpu.system) / 1e6, unit: 's' },
    { label: `${mode.label}: peak RSS`, value: peakRss / 2 ** 20, unit: 'MiB' },
    { label: `${mode.label}: peak heap used`, value: peakHeap / 2 ** 20, unit: 'MiB' },
    {
      label: `${mode.label}: heap used after close`,
      value: process.memoryUsage().heapUsed / 2 ** 20,
      unit: 'MiB',
    },
  ];
}

export const connectorBench: BenchModule = {
  name: 'connector',
  async run() {
    const stack = await provideStack(['environment', 'jvm']);
    const sandbox = await startSandboxWorker();
    const dir = await mkdtemp(join(tmpdir(), 'calls-bench-'));
    const caFile = join(dir, 'sandbox-ca.pem');
    await writeFile(caFile, sandbox.ready.caCertPem ?? '');
    const figures: BenchFigure[] = [];
    try {
      for (const mode of modes) figures.push(...(await backfill(mode, sandbox.ready, caFile, stack)));
    } finally {
      await sandbox.close();
      await stack.stop();
    }
    return {
      name: 'connector',
      figures,
      notes: [
        `Full backfill of ${LOCATIONS} locations × ${CALLS_PER_LOCATION} generated calls (listable ones published), page size 100, all locations in flight.`,
        'Sandbox in a worker thread of the same process (its own event loop) over HTTPS on loopback; Kafka 3.9 and Apicurio from the dev stack on the same 2-core machine.',
        'Peak memory is of the whole process (connector + sandbox worker); the sandbox holds the data set in memory.',
      ],
    };
  },
};
