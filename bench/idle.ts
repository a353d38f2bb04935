/**
 * Idle cost: many quiet locations (no call changes) polled at a fixed interval, the sandbox in a child
 * process so that the CPU time measured is the connector's alone. After every location has completed its
 * first traversal, measures over a window: CPU % of one core, RSS, requests/s, CPU ms per idle poll, and how
 * evenly the polls spread (per-second counts: coefficient of variation and max/mean).
 *
 * Knobs (env): BENCH_IDLE_LOCATIONS (2000), BENCH_IDLE_INTERVAL_MS (60000), BENCH_IDLE_WINDOW_S (interval + 10 s),
 * BENCH_IDLE_RPS (requests/s limit, 200: the default 20 cannot poll 2,000 locations a minute).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../src/config/load.js';
import { provideStack } from '../tools/devstack/stack-provider.js';
import { silentLogger } from '../src/logging/logger.js';
import { ConnectorMetrics } from '../src/metrics/metrics.js';
import { ConnectorRuntime } from '../src/runtime/connector.js';
import type { WorkerReady } from './sandbox-worker.js';
import { envInt, REPETITIONS, Samples } from './stats.js';
import type { BenchModule, BenchResult } from './types.js';

const LOCATIONS = envInt('BENCH_IDLE_LOCATIONS', 2_000);
const INTERVAL_MS = envInt('BENCH_IDLE_INTERVAL_MS', 60_000);
// At least one interval: the polls of a round may come in a burst, then nothing until the next round.
const WINDOW_S = envInt('BENCH_IDLE_WINDOW_S', Math.ceil(INTERVAL_MS / 1000) + 10);
const RPS = envInt('BENCH_IDLE_RPS', 200);
const FIRST_ROUND_LIMIT_MS = 5 * 60_000;

async function startSandboxProcess(): Promise<{ ready: WorkerReady; child: ChildProcess }> {
  const child = fork(new URL('./sandbox-process.js', import.meta.url), [String(LOCATIONS), '1'], {
    execArgv: [],
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const [ready] = (await once(child, 'message')) as [WorkerReady];
  return { ready, child };
}

const polls = (runtime: ConnectorRuntime) =>
  runtime.status().reduce((n, s) => n + s.totals.traversalsCompleted, 0);

async function oneRun(
  sandbox: WorkerReady,
  caFile: string,
  brokers: string[],
  registryUrl: string,
  s: Samples,
) {
  const run = `bench-idle-${Date.now().toString(36)}`;
  const config = parseConfig(
    {
      connector: { name: run },
      api: { baseUrl: sandbox.baseUrl, caFile, pageSize: 100, requestsPerSecond: RPS, enrich: true },
      auth: { staticToken: sandbox.accessToken },
      sources: [{ locations: sandbox.locations }],
      kafka: {
        brokers,
        topic: run,
        offsetsTopic: `${run}-offsets`,
        dlqTopic: `${run}-dlq`,
        topicPartitions: 6,
        exactlyOnce: true,
      },
      schemaRegistry: { url: registryUrl },
      poll: { intervalMs: INTERVAL_MS },
      metrics: { enabled: false },
    },
    {},
  );
  const metrics = new ConnectorMetrics({ perLocationLabels: false });
  const runtime = await ConnectorRuntime.start({ config, logger: silentLogger(), metrics });
  const stop = new AbortController();
  const running = runtime.run(stop.signal);
  const deadline = Date.now() + FIRST_ROUND_LIMIT_MS;
  while (runtime.status().some((l) => l.totals.traversalsCompleted < 1) && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 200));
  // The window: idle polls only (every location has its data and offset).
  const perSecond: number[] = [];
  let peakRss = 0;
  const startPolls = polls(runtime);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let last = startPolls;
  for (let i = 0; i < WINDOW_S; i++) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const now = polls(runtime);
    perSecond.push(now - last);
    last = now;
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
  }
  const cpu = process.cpuUsage(cpu0);
  const seconds = (performance.now() - t0) / 1000;
  const idlePolls = polls(runtime) - startPolls;
  stop.abort();
  await running;
  await runtime.close();
  const cpuMs = (cpu.user + cpu.system) / 1000;
  const mean = perSecond.reduce((a, b) => a + b, 0) / perSecond.length;
  const sd = Math.sqrt(perSecond.reduce((a, b) => a + (b - mean) ** 2, 0) / perSecond.length);
  s.add('CPU (connector process, sandbox excluded)', '% of one core', cpuMs / 10 / seconds);
  s.add('RSS (peak in the window)', 'MiB', peakRss / 2 ** 20);
  s.add('idle polls (= listing requests)', 'req/s', idlePolls / seconds);
  s.add('CPU per idle poll', 'ms', idlePolls === 0 ? Number.NaN : cpuMs / idlePolls);
  s.add('polls per second: coefficient of variation', 'ratio', mean === 0 ? Number.NaN : sd / mean);
  s.add(
    'polls per second: busiest second / mean',
    'ratio',
    mean === 0 ? Number.NaN : Math.max(...perSecond) / mean,
  );
}

export const idleBench: BenchModule = {
  name: 'idle',
  async run(): Promise<BenchResult> {
    const stack = await provideStack(['environment', 'jvm']);
    const { ready, child } = await startSandboxProcess();
    const dir = await mkdtemp(join(tmpdir(), 'calls-bench-'));
    const caFile = join(dir, 'sandbox-ca.pem');
    await writeFile(caFile, ready.caCertPem ?? '');
    const s = new Samples();
    try {
      for (let rep = 0; rep < REPETITIONS; rep++)
        await oneRun(ready, caFile, stack.brokers, stack.registryUrl, s);
    } finally {
      child.send('close');
      await once(child, 'exit');
      await stack.stop();
    }
    return {
      name: `idle cost: ${LOCATIONS.toLocaleString('en-US')} quiet locations at a ${INTERVAL_MS / 1000} s interval`,
      figures: s.figures(),
      notes: [
        `${LOCATIONS} locations of 1 call each; after every location completed its first traversal, a ${WINDOW_S} s window of idle polls; requestsPerSecond ${RPS}, exactly-once, enrichment on.`,
        'The sandbox runs in a child process: CPU and RSS are the connector process alone (Node, kafkajs, metrics included).',
        `At ${LOCATIONS} locations and ${INTERVAL_MS / 1000} s, an even spread is ${((LOCATIONS * 1000) / INTERVAL_MS).toFixed(1)} polls/s.`,
      ],
    };
  },
};
