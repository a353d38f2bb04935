/**
 * Idle cost (issue 15 point 4, issue 14 point 6): many quiet locations (no call changes) polled at a fixed
 * interval, the sandbox in a child process so that the CPU time measured is the connector's alone. After
 * every location has completed its first traversal, measures REPETITIONS consecutive windows of one interval
 * each (the same connector: a start of 10,000 locations is itself a minute): CPU % of one core, RSS,
 * requests/s, CPU ms per idle poll, and how evenly the polls spread over the interval (per-second counts:
 * coefficient of variation and busiest second / mean).
 *
 * Knobs (env): BENCH_IDLE_LOCATIONS (10000; 1000 judges issue 39's goal, ≤ 2.5 % of a core),
 * BENCH_IDLE_INTERVAL_MS (60000), BENCH_IDLE_WINDOW_S (the interval), BENCH_IDLE_RPS (api.requestsPerSecond,
 * 200: the default 20 cannot poll 10,000 locations a minute, which needs 167), BENCH_IDLE_SANDBOX_PORT (0:
 * ephemeral), BENCH_IDLE_PROFILE (a file: the CPU profile of the windows alone, idle polls only, for Chrome
 * DevTools or `speedscope`).
 *
 * The floor, in the same run: after the connector's windows (the connector closed), REPETITIONS windows of the
 * same length in which a tight client (one undici Agent, keep-alive, the same sandbox child, the connector's
 * exact idle request: `GET /v4/calls?order=asc&locationUid=…&limit=100&since=<the location's watermark>` with
 * the same bearer header, so the same one-call answer) makes the same number of requests per second, spaced
 * evenly. Its CPU per request is measured the same way (process.cpuUsage over the window, this process), so
 * "CPU per idle poll / floor" says how much of the idle cost is the connector's own: the rest is Node's
 * HTTPS client, TLS and the loopback socket, which any client pays.
 */
import { createWriteStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { devNull } from 'node:os';
import { rootCertificates } from 'node:tls';
import { Session } from 'node:inspector/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { provideStack } from '../tools/devstack/stack-provider.js';
import { createLogger } from '../src/logging/logger.js';
import { ConnectorMetrics } from '../src/metrics/metrics.js';
import { ConnectorRuntime } from '../src/runtime/connector.js';
import { benchConfig } from './connector.js';
import { startSandboxChild } from './sandbox-child.js';
import { atMost, envInt, ratios, REPETITIONS, Samples } from './stats.js';
import type { BenchModule, BenchResult } from './types.js';

const FIRST_ROUND_LIMIT_MS = 10 * 60_000;

const polls = (runtime: ConnectorRuntime) =>
  runtime.status().reduce((n, s) => n + s.totals.traversalsCompleted, 0);

/**
 * Live traversals completed so far, read from the traversal-duration histogram's count: in the windows every
 * location is caught up, so it counts what `polls` counts, without building every location's status each second
 * (1,000 status objects a second were 2 % of the CPU measured).
 */
async function completedTraversals(metrics: ConnectorMetrics): Promise<number> {
  const { values } = await metrics.traversalDuration.get();
  return values.find((v) => v.metricName === 'calls_connector_traversal_duration_seconds_count')?.value ?? 0;
}

/** One window of idle polls, measured second by second. */
async function window(metrics: ConnectorMetrics, seconds: number, s: Samples): Promise<void> {
  const polls = () => completedTraversals(metrics);
  const perSecond: number[] = [];
  let peakRss = 0;
  const startPolls = await polls();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let last = startPolls;
  for (let i = 0; i < seconds; i++) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const now = await polls();
    perSecond.push(now - last);
    last = now;
    peakRss = Math.max(peakRss, process.memoryUsage.rss());
  }
  const cpu = process.cpuUsage(cpu0);
  const elapsed = (performance.now() - t0) / 1000;
  const idlePolls = (await polls()) - startPolls;
  const cpuMs = (cpu.user + cpu.system) / 1000;
  const mean = perSecond.reduce((a, b) => a + b, 0) / perSecond.length;
  const sd = Math.sqrt(perSecond.reduce((a, b) => a + (b - mean) ** 2, 0) / perSecond.length);
  s.add('CPU (connector process, sandbox excluded)', '% of one core', cpuMs / 10 / elapsed);
  s.add('RSS (peak in the window)', 'MiB', peakRss / 2 ** 20);
  s.add('idle polls (= listing requests)', 'req/s', idlePolls / elapsed);
  s.add('CPU per idle poll', 'ms', idlePolls === 0 ? Number.NaN : cpuMs / idlePolls);
  s.add('polls per second: coefficient of variation', 'ratio', mean === 0 ? Number.NaN : sd / mean);
  s.add(
    'polls per second: busiest second / mean',
    'ratio',
    mean === 0 ? Number.NaN : Math.max(...perSecond) / mean,
  );
}

/** One idle request of the floor: the connector's listing request for a location at its watermark. */
interface IdleRequest {
  path: string;
  authorization: string;
}

/**
 * One window of the floor: `rate` requests per second spaced evenly (fired on time, never waiting for the
 * previous answer, as the connector's locations do), each body read whole. Records its CPU per request.
 */
async function floorWindow(
  agent: Agent,
  origin: string,
  requests: readonly IdleRequest[],
  rate: number,
  seconds: number,
  s: Samples,
): Promise<void> {
  const periodMs = 1000 / rate;
  let answered = 0;
  let failed = 0;
  const inFlight = new Set<Promise<void>>();
  const fire = (i: number) => {
    const r = requests[i % requests.length] as IdleRequest;
    const p = request(`${origin}${r.path}`, {
      dispatcher: agent,
      headers: { authorization: r.authorization, accept: 'application/json' },
    })
      .then(async (res) => {
        await res.body.text();
        if (res.statusCode === 200) answered += 1;
        else failed += 1;
      })
      .catch(() => {
        failed += 1;
      })
      .finally(() => inFlight.delete(p));
    inFlight.add(p);
  };
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  let next = t0;
  let i = 0;
  for (;;) {
    const now = performance.now();
    if (now >= end) break;
    while (next <= now) {
      fire(i++);
      next += periodMs;
    }
    await sleep(Math.max(1, next - performance.now()));
  }
  await Promise.all(inFlight);
  const cpu = process.cpuUsage(cpu0);
  const elapsed = (performance.now() - t0) / 1000;
  if (failed > 0) throw new Error(`floor: ${failed} of ${failed + answered} requests failed`);
  const cpuMs = (cpu.user + cpu.system) / 1000;
  s.add('floor: tight client requests', 'req/s', answered / elapsed);
  s.add('floor: CPU per request (tight undici client, same requests)', 'ms', cpuMs / answered);
}

export const idleBench: BenchModule = {
  name: 'idle',
  isolated: true,
  async run(): Promise<BenchResult> {
    const locations = envInt('BENCH_IDLE_LOCATIONS', 10_000);
    const intervalMs = envInt('BENCH_IDLE_INTERVAL_MS', 60_000);
    const windowS = envInt('BENCH_IDLE_WINDOW_S', Math.ceil(intervalMs / 1000));
    const rps = envInt('BENCH_IDLE_RPS', 200);
    const stack = await provideStack(['environment', 'jvm']);
    const port = envInt('BENCH_IDLE_SANDBOX_PORT', 0);
    const sandbox = await startSandboxChild(locations, 1, port === 0 ? {} : { port });
    const s = new Samples();
    let firstRoundS = 0;
    let settleS = 0;
    try {
      const run = `bench-idle-${Date.now().toString(36)}`;
      const config = benchConfig({
        run,
        sandbox: sandbox.ready,
        caFile: sandbox.caFile,
        stack,
        api: { requestsPerSecond: rps, enrich: true },
        poll: { intervalMs },
      });
      const metrics = new ConnectorMetrics({ perLocationLabels: false });
      // A production logger (JSON at info, secret scrubbing) writing to /dev/null: its cost per poll counts.
      const logger = createLogger({ level: 'info', format: 'json', destination: createWriteStream(devNull) });
      const runtime = await ConnectorRuntime.start({ config, logger, metrics });
      const stop = new AbortController();
      const running = runtime.run(stop.signal);
      const t0 = performance.now();
      const deadline = Date.now() + FIRST_ROUND_LIMIT_MS;
      while (runtime.status().some((l) => l.totals.traversalsCompleted < 1) && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 200));
      firstRoundS = (performance.now() - t0) / 1000;
      // Settle: when the first round ends, the idle polls that fell due during it are still queued at the rate
      // limiter, and they drain at its cap (measured: 196 polls/s at 200 requests/s, where the steady state is
      // 167). Wait until a 10 s sample is back within 5 % of the even rate (at most 3 intervals).
      const even = locations / (intervalMs / 1000);
      const settleStart = performance.now();
      for (;;) {
        const before = polls(runtime);
        await new Promise((resolve) => setTimeout(resolve, 10_000));
        const rate = (polls(runtime) - before) / 10;
        if (rate <= even * 1.05 || performance.now() - settleStart > 3 * intervalMs) break;
      }
      settleS = (performance.now() - settleStart) / 1000;
      // The windows: idle polls only (every location has its data and offset).
      const profile = process.env['BENCH_IDLE_PROFILE'];
      const session = new Session();
      if (profile !== undefined) {
        session.connect();
        await session.post('Profiler.enable');
        await session.post('Profiler.start');
      }
      for (let rep = 0; rep < REPETITIONS; rep++) await window(metrics, windowS, s);
      if (profile !== undefined) {
        const { profile: taken } = await session.post('Profiler.stop');
        await writeFile(profile, JSON.stringify(taken));
        session.disconnect();
      }
      // The floor's requests: each location's idle listing request, as the connector sends it now.
      const requests: IdleRequest[] = runtime.status().map((l) => ({
        path: `${config.api.listPath}?${new URLSearchParams({
          order: 'asc',
          locationUid: l.locationUid,
          limit: String(config.api.pageSize),
          ...(l.offset.since === null ? {} : { since: l.offset.since }),
        }).toString()}`,
        authorization: `${config.api.tokenPrefix}${sandbox.ready.accessToken}`,
      }));
      stop.abort();
      await running;
      await runtime.close();
      const agent = new Agent({
        keepAliveTimeout: 30_000,
        connections: config.api.maxConcurrency,
        connect: { ca: [...rootCertificates, sandbox.ready.caCertPem ?? ''] },
      });
      try {
        const rate = (locations * 1000) / intervalMs;
        for (let rep = 0; rep < REPETITIONS; rep++)
          await floorWindow(agent, new URL(config.api.baseUrl).origin, requests, rate, windowS, s);
      } finally {
        await agent.close();
      }
      const perPoll = s.values('CPU per idle poll');
      const floor = s.values('floor: CPU per request (tight undici client, same requests)');
      for (const r of ratios(perPoll, floor)) s.add('CPU per idle poll / floor', 'ratio', r);
      // Each repetition against the floor of the same index: the connector's own CPU per poll, past its request.
      perPoll.forEach((ms, i) => {
        const f = floor[i];
        if (f !== undefined) s.add("CPU per idle poll − floor (the connector's own)", 'ms', ms - f);
      });
    } finally {
      await sandbox.close();
      await stack.stop();
    }
    return {
      name: `idle cost: ${locations.toLocaleString('en-US')} quiet locations at a ${intervalMs / 1000} s interval`,
      figures: s.figures(),
      // Issue 39's goal is stated at 1,000 locations (BENCH_IDLE_LOCATIONS=1000), issue 15's at 10,000.
      goals:
        locations <= 1_000
          ? [
              atMost(
                'idle, 1,000 quiet locations at 60 s: ≤ 2.5 % of one core',
                'CPU (connector process, sandbox excluded)',
                2.5,
              ),
            ]
          : [
              atMost('idle: < 5 % of one core', 'CPU (connector process, sandbox excluded)', 5),
              atMost('idle: < 0.3 ms CPU per idle poll', 'CPU per idle poll', 0.3),
            ],
      notes: [
        `${locations} locations of 1 call each; after every location completed its first traversal (${firstRoundS.toFixed(0)} s) and the polls it left queued at the rate limiter drained (${settleS.toFixed(0)} s more, until a 10 s sample was within 5 % of the even rate), ${REPETITIONS} consecutive windows of ${windowS} s of idle polls; api.requestsPerSecond ${rps}, exactly-once, enrichment on.`,
        "The sandbox runs in a child process: CPU and RSS are the connector process alone (Node, kafkajs, metrics and a JSON logger at info to /dev/null included). CPU is the process's own CPU time (process.cpuUsage: user + system, every thread, GC helpers included), not wall-clock load, so other work on the machine slows it little; a busy machine still raises it some (caches, shared cores).",
        'The floor: the same requests at the same rate from a tight undici client (keep-alive Agent, same connections, no limiter, no Kafka) in this process after the connector closed; CPU per request measured the same way. The idle listing answers the boundary call again (`since` is inclusive), so both read a one-call page.',
        `At ${locations} locations and ${intervalMs / 1000} s, an even spread is ${((locations * 1000) / intervalMs).toFixed(1)} polls/s; with each location due at its own phase of the interval, the per-second counts vary like a Poisson count (busiest second about 1 + 3/√mean).`,
      ],
    };
  },
};
