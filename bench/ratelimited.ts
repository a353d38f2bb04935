/**
 * The API sets the pace (issue 21 point 9): the connector in its default configuration (api.requestsPerSecond
 * 20, enrichment on) against a sandbox that enforces a limit it does not announce (a token bucket of one
 * second's requests per access token, 429 with Retry-After), at several limits. The connector must learn each
 * limit: served rate (requests answered 2xx per second) >= 0.9 of the limit after at most 30 s of warm-up,
 * 429s <= 2 % of requests, enriched backfill records/s >= 0.85 x limit x pageSize / (pageSize + 1) (one
 * listing request per page of 100, one GET per call). One run announces the limit in RateLimit headers:
 * 429s <= 0.1 % there. Each run is one connector for BENCH_RL_SECONDS; figures are from one run each (the
 * rows have no min/max).
 *
 * Knobs (env): BENCH_RL_LIMITS (5,20,60,200), BENCH_RL_HEADERS_LIMITS (20: runs with the headers on),
 * BENCH_RL_SECONDS (75), BENCH_RL_WARMUP_SECONDS (30), BENCH_RL_LATENCY_MS (20, the median; p99 three times
 * it), BENCH_RL_LOCATIONS (1: a page of 100 calls takes 20 s at 5/s, and pages are what is published).
 */
import { provideStack, type DevStack } from '../tools/devstack/stack-provider.js';
import { silentLogger } from '../src/logging/logger.js';
import { ConnectorMetrics } from '../src/metrics/metrics.js';
import { ConnectorRuntime } from '../src/runtime/connector.js';
import { benchConfig } from './connector.js';
import { startSandboxChild } from './sandbox-child.js';
import { atLeast, atMost, envInt, envList } from './stats.js';
import type { BenchFigure, BenchGoal, BenchModule, BenchResult } from './types.js';

const PAGE = 100;

interface Sample {
  atS: number;
  ok: number;
  refused: number;
  published: number;
}

interface RunFigures {
  servedRatio: number;
  refusedShare: number;
  refusedShareAfterWarmUp: number;
  recordsPerS: number;
  recordsGoal: number;
  learnedRate: number;
}

async function runAt(
  limit: number,
  headers: boolean,
  stack: DevStack,
  seconds: number,
  warmUpS: number,
  latencyMs: number,
  locations: number,
): Promise<RunFigures> {
  // More calls than the run can read: the backfill never ends within it, so the whole run is backfill.
  const calls = Math.max(200, Math.ceil((limit * seconds * 1.3) / locations));
  const sandbox = await startSandboxChild(locations, calls, {
    faults: {
      latency: { medianMs: latencyMs, p99Ms: 3 * latencyMs },
      rateLimit: { requestsPerSecond: limit, burst: limit, per: 'token', headers },
    },
  });
  const run = `bench-rl-${limit}-${Date.now().toString(36)}`;
  // The default configuration: only the sandbox, the stack and this run's topics are set.
  const config = benchConfig({ run, sandbox: sandbox.ready, caFile: sandbox.caFile, stack });
  const metrics = new ConnectorMetrics({ perLocationLabels: false });
  const runtime = await ConnectorRuntime.start({ config, logger: silentLogger(), metrics });
  const stop = new AbortController();
  const samples: Sample[] = [];
  try {
    const started = performance.now();
    const running = runtime.run(stop.signal);
    const sample = async (): Promise<void> => {
      const stats = await sandbox.stats();
      samples.push({
        atS: (performance.now() - started) / 1000,
        ok: stats.byStatus['200'] ?? 0,
        refused: stats.byStatus['429'] ?? 0,
        published: runtime.status().reduce((n, s) => n + s.totals.published, 0),
      });
    };
    while ((performance.now() - started) / 1000 < seconds) {
      await sample();
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    await sample();
    const learned = (await metrics.apiRateLimitRate.get()).values[0]?.value ?? 0;
    stop.abort();
    await running;
    const first = samples.find((s) => s.atS >= warmUpS) ?? samples[0]!;
    const last = samples[samples.length - 1]!;
    const span = last.atS - first.atS;
    // Records are published a page (100) at a time: at 5 requests/s a page takes 20 s, so the rate is read
    // from commit to commit (the samples where the count grew) rather than over a window cutting pages.
    const commits = samples.filter(
      (s, i) => s.atS >= warmUpS && i > 0 && s.published > samples[i - 1]!.published,
    );
    const firstCommit = commits[0];
    const lastCommit = commits[commits.length - 1];
    const recordsPerS =
      firstCommit !== undefined && lastCommit !== undefined && lastCommit.atS > firstCommit.atS
        ? (lastCommit.published - firstCommit.published) / (lastCommit.atS - firstCommit.atS)
        : (last.published - first.published) / span;
    const requests = last.ok + last.refused;
    const windowRequests = last.ok - first.ok + (last.refused - first.refused);
    return {
      servedRatio: (last.ok - first.ok) / span / limit,
      refusedShare: requests === 0 ? 0 : last.refused / requests,
      refusedShareAfterWarmUp: windowRequests === 0 ? 0 : (last.refused - first.refused) / windowRequests,
      recordsPerS,
      recordsGoal: (0.85 * limit * PAGE) / (PAGE + 1),
      learnedRate: learned,
    };
  } finally {
    await runtime.close();
    await sandbox.close();
  }
}

export const rateLimitedBench: BenchModule = {
  name: 'ratelimited',
  async run(): Promise<BenchResult> {
    const limits = envList('BENCH_RL_LIMITS', [5, 20, 60, 200]);
    const headerLimits = envList('BENCH_RL_HEADERS_LIMITS', [20]);
    const seconds = envInt('BENCH_RL_SECONDS', 75);
    const warmUpS = envInt('BENCH_RL_WARMUP_SECONDS', 30);
    const latencyMs = envInt('BENCH_RL_LATENCY_MS', 20);
    const locations = envInt('BENCH_RL_LOCATIONS', 1);
    const stack = await provideStack(['environment', 'jvm']);
    const figures: BenchFigure[] = [];
    const goals: BenchGoal[] = [];
    const runs = [
      ...limits.map((limit) => ({ limit, headers: false })),
      ...headerLimits.map((limit) => ({ limit, headers: true })),
    ];
    try {
      for (const { limit, headers } of runs) {
        const f = await runAt(limit, headers, stack, seconds, warmUpS, latencyMs, locations);
        const tag = `${limit}/s${headers ? ' announced' : ' hidden'}`;
        const served = `${tag}: served / limit after ${warmUpS} s`;
        const refused = `${tag}: 429s / requests (whole run)`;
        const records = `${tag}: enriched records/s / (0.85 × limit × 100/101)`;
        figures.push(
          { label: served, value: f.servedRatio, unit: 'ratio' },
          { label: refused, value: f.refusedShare, unit: 'ratio' },
          {
            label: `${tag}: 429s / requests after ${warmUpS} s`,
            value: f.refusedShareAfterWarmUp,
            unit: 'ratio',
          },
          { label: `${tag}: enriched records/s after ${warmUpS} s`, value: f.recordsPerS, unit: 'records/s' },
          { label: records, value: f.recordsPerS / f.recordsGoal, unit: 'ratio' },
          { label: `${tag}: learned rate at the end`, value: f.learnedRate, unit: 'req/s' },
        );
        goals.push(
          atLeast(`ratelimited ${tag}: served ≥ 0.9 of the limit after warm-up`, served, 0.9),
          atMost(
            `ratelimited ${tag}: 429s ≤ ${headers ? '0.1' : '2'} % of requests`,
            refused,
            headers ? 0.001 : 0.02,
          ),
          atLeast(`ratelimited ${tag}: enriched records/s ≥ 0.85 × limit × 100/101`, records, 1),
        );
      }
    } finally {
      await stack.stop();
    }
    return {
      name: `rate-limited reality: limits ${limits.join(', ')} requests/s the API does not announce (and ${headerLimits.join(', ')} announced), default configuration`,
      figures,
      goals,
      notes: [
        `Default configuration (api.requestsPerSecond 20, maxConcurrency 8, enrichConcurrency 8, pageSize 100), exactly-once, enrichment on; ${locations} locations with more calls than a run reads, so each run is all backfill.`,
        `Sandbox in a child process: latency log-normal median ${latencyMs} ms, p99 ${3 * latencyMs} ms; a token bucket per access token of one second's requests refilled at the limit, answering 429 with Retry-After (whole seconds to the next token).`,
        `One run of ${seconds} s per limit; served rate and records/s over the run after ${warmUpS} s of warm-up, from the sandbox's own answer counts (2xx and 429) sampled every second.`,
      ],
    };
  },
};
