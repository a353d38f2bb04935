/**
 * The rate-limited reality (issue 15 point 2): the API adds latency and enforces a request rate, the
 * connector runs with its default api.requestsPerSecond (20) and enrichment on. What the limit allows is
 * one listing request per page of 100 plus one GET per call: bound = rate × records / (pages + records).
 * Figures: records/s achieved as a ratio to that bound (goal >= 0.95), and the 429s the sandbox's enforced
 * limit (a token bucket of one second's requests) answered, which only the connector's own bursts cause
 * (goal 0). The sandbox runs in a child process.
 *
 * Knobs (env): BENCH_RL_LOCATIONS (4), BENCH_RL_CALLS (150 per location), BENCH_RL_RPS (20),
 * BENCH_RL_LATENCY_MS (50, the median; p99 twice it), BENCH_RL_BURST (the sandbox bucket, = the rate).
 */
import { provideStack } from '../tools/devstack/stack-provider.js';
import { backfill } from './connector.js';
import { startSandboxChild } from './sandbox-child.js';
import { atLeast, atMost, envInt, ratios, REPETITIONS, Samples } from './stats.js';
import type { BenchModule, BenchResult } from './types.js';

const PAGE = 100;

export const rateLimitedBench: BenchModule = {
  name: 'ratelimited',
  async run(): Promise<BenchResult> {
    const locations = envInt('BENCH_RL_LOCATIONS', 4);
    const calls = envInt('BENCH_RL_CALLS', 150);
    const rps = envInt('BENCH_RL_RPS', 20);
    const latencyMs = envInt('BENCH_RL_LATENCY_MS', 50);
    const burst = envInt('BENCH_RL_BURST', rps);
    const stack = await provideStack(['environment', 'jvm']);
    const s = new Samples();
    const achieved: number[] = [];
    const bounds: number[] = [];
    try {
      for (let rep = 0; rep < REPETITIONS; rep++) {
        // A fresh sandbox per repetition: a full bucket and zeroed counters.
        const sandbox = await startSandboxChild(locations, calls, {
          faults: {
            latency: { medianMs: latencyMs, p99Ms: 2 * latencyMs },
            rateLimit: { requestsPerSecond: rps, burst },
          },
        });
        try {
          const figures = await backfill(
            { label: 'rate-limited', exactlyOnce: true, enrich: true },
            sandbox.ready,
            sandbox.caFile,
            stack,
            { api: { requestsPerSecond: rps, maxConcurrency: 8, enrichConcurrency: 8 } },
          );
          const value = (label: string) => figures.find((f) => f.label.endsWith(label))?.value ?? 0;
          const records = value('records published');
          const throughput = value('backfill throughput');
          // Each location needs ceil(n / page) listing requests and n GETs; spread evenly over the locations.
          const perLocation = records / locations;
          const needed = locations * (Math.max(1, Math.ceil(perLocation / PAGE)) + perLocation);
          const bound = (rps * records) / needed;
          const stats = await sandbox.stats();
          achieved.push(throughput);
          bounds.push(bound);
          s.add('records/s achieved', 'records/s', throughput);
          s.add('bound the limit allows (rate × records / requests needed)', 'records/s', bound);
          s.add(
            "429 answered by the API's enforced limit (the connector's own bursts)",
            'count',
            stats.faults.rateLimited,
          );
          s.add('requests sent (all statuses)', 'count', stats.listRequests + stats.getRequests);
        } finally {
          await sandbox.close();
        }
      }
    } finally {
      await stack.stop();
    }
    for (const r of ratios(achieved, bounds)) s.add('ratio: achieved / bound (goal >= 0.95)', 'ratio', r);
    return {
      name: `rate-limited reality: ${rps} requests/s, ${latencyMs} ms API latency, enrichment on`,
      figures: s.figures(),
      goals: [
        atLeast('rate-limited: achieved ≥ 0.95 of the bound', 'ratio: achieved / bound (goal >= 0.95)', 0.95),
        atMost(
          "rate-limited: no 429 from the connector's own bursts",
          "429 answered by the API's enforced limit (the connector's own bursts)",
          0,
        ),
      ],
      notes: [
        `${locations} locations × ${calls} calls (listable ones published), exactly-once, enrichment on, api.requestsPerSecond ${rps} (the default), api.maxConcurrency 8.`,
        `Sandbox in a child process with latency log-normal median ${latencyMs} ms, p99 ${2 * latencyMs} ms, and an enforced limit: a token bucket of ${burst} tokens refilled at ${rps}/s; every 429 it answers is the connector's own doing.`,
        "Throughput from the connector's run() (start-up done) to the last traversal completed, so small data sets pay the first and last requests' latency and the last commit; the bound is the rate times records per request needed (one listing per page of 100, one GET per call).",
      ],
    };
  },
};
