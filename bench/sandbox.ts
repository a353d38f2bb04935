/**
 * Sandbox throughput on loopback HTTPS: listing pages of 100 and single-call gets, with 1,000 locations x
 * 1,000 calls in memory. The sandbox runs in a worker thread (its own event loop); one undici Agent with keep-alive, `concurrency` requests in flight, each scenario
 * bounded by a duration and a request count. Also records how long the data set takes to generate.
 *
 * Knobs (env): BENCH_SANDBOX_SECONDS (default 8), BENCH_SANDBOX_CONCURRENCY (16),
 * BENCH_SANDBOX_LOCATIONS (1000), BENCH_SANDBOX_CALLS (1000), BENCH_SANDBOX_MAX_REQUESTS (200000).
 */
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { Agent, request } from 'undici';
import { generateData } from '../packages/sandbox/src/data/generator.js';
import type { LocationIndex } from '../packages/sandbox/src/data/location-index.js';
import { readPage } from '../packages/sandbox/src/listing/page.js';
import { createRandom } from '../packages/sandbox/src/random.js';
import type { WorkerReady } from './sandbox-worker.js';
import { envInt, percentile } from './stats.js';
import type { BenchFigure, BenchModule, BenchResult } from './types.js';

interface ScenarioResult {
  requests: number;
  seconds: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
}

/** Runs `concurrency` loops of `step` until the time or request budget is spent. */
async function scenario(
  concurrency: number,
  seconds: number,
  maxRequests: number,
  step: (worker: number) => Promise<boolean>,
): Promise<ScenarioResult> {
  const latencies: number[] = [];
  let errors = 0;
  let started = 0;
  const deadline = performance.now() + seconds * 1000;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, worker) => {
      while (performance.now() < deadline && started < maxRequests) {
        started++;
        const t = performance.now();
        const ok = await step(worker);
        latencies.push(performance.now() - t);
        if (!ok) errors++;
      }
    }),
  );
  const elapsed = (performance.now() - t0) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    requests: latencies.length,
    seconds: elapsed,
    p50Ms: percentile(latencies, 0.5),
    p99Ms: percentile(latencies, 0.99),
    errors,
  };
}

async function getJson(agent: Agent, url: string, token: string): Promise<{ status: number; body: unknown }> {
  const res = await request(url, { dispatcher: agent, headers: { authorization: `Bearer ${token}` } });
  return { status: res.statusCode, body: await res.body.json() };
}

async function measure(
  sandbox: WorkerReady,
  concurrency: number,
  seconds: number,
  maxRequests: number,
): Promise<{ list: ScenarioResult; get: ScenarioResult }> {
  const agent = new Agent({
    connect: { ca: sandbox.caCertPem ?? undefined },
    connections: concurrency,
    keepAliveTimeout: 10_000,
  });
  const { accessToken, locations, uids } = sandbox;
  const random = createRandom(42);
  // Listing: each worker walks a random location's pages of 100 by cursor, then starts another.
  const cursors: (string | null)[] = Array.from({ length: concurrency }, () => null);
  const list = await scenario(concurrency, seconds, maxRequests, async (w) => {
    const cursor = cursors[w] ?? null;
    const query =
      cursor === null
        ? `locationUid=${locations[random.int(0, locations.length - 1)] ?? ''}&limit=100`
        : `cursor=${encodeURIComponent(cursor)}&limit=100`;
    const { status, body } = await getJson(agent, `${sandbox.baseUrl}/v4/calls?${query}`, accessToken);
    cursors[w] =
      status === 200
        ? ((body as { metadata: { nextCursor: string | null } }).metadata.nextCursor ?? null)
        : null;
    return status === 200;
  });
  const get = await scenario(concurrency, seconds, maxRequests, async () => {
    const uid = uids[random.int(0, uids.length - 1)] ?? '';
    const { status } = await getJson(agent, `${sandbox.baseUrl}/v4/calls/${uid}`, accessToken);
    return status === 200;
  });
  await agent.close();
  return { list, get };
}

/**
 * Index cost alone (no HTTP): mean microseconds to read a page of 100 at a random cursor position in one
 * location. Compared across location sizes it shows the O(log n + page) of the sorted index.
 */
function pageReadMicros(index: LocationIndex, reads: number): number {
  const random = createRandom(7);
  const t0 = performance.now();
  let passed = 0;
  for (let i = 0; i < reads; i++) {
    const at = index.at(random.int(0, index.size - 1));
    if (at === undefined) continue;
    passed += readPage({
      indexes: [index],
      sinceMs: null,
      order: 'asc',
      limit: 100,
      after: { ms: at.updatedAtMs, uid: at.uid },
    }).passed.length;
  }
  const micros = ((performance.now() - t0) * 1000) / reads;
  return passed >= 0 ? micros : 0;
}

function indexFigures(): BenchFigure[] {
  return [1_000, 1_000_000].map((calls) => {
    const store = generateData({ seed: 2, locations: 1, callsPerLocation: calls });
    const index = store.index(store.locations[0] ?? '') as LocationIndex;
    pageReadMicros(index, 2_000);
    return {
      label: `page of 100 read from the index, location of ${calls.toLocaleString('en-US')} calls`,
      value: pageReadMicros(index, 20_000),
      unit: 'µs',
    };
  });
}

export const sandboxBench: BenchModule = {
  name: 'sandbox',
  async run(): Promise<BenchResult> {
    const seconds = envInt('BENCH_SANDBOX_SECONDS', 8);
    const concurrency = envInt('BENCH_SANDBOX_CONCURRENCY', 16);
    const locations = envInt('BENCH_SANDBOX_LOCATIONS', 1000);
    const calls = envInt('BENCH_SANDBOX_CALLS', 1000);
    const maxRequests = envInt('BENCH_SANDBOX_MAX_REQUESTS', 200_000);
    const worker = new Worker(new URL('./sandbox-worker.js', import.meta.url), {
      workerData: { locations, calls },
    });
    const [sandbox] = (await once(worker, 'message')) as [WorkerReady];
    const { startMs, heapMb } = sandbox;
    try {
      const { list, get } = await measure(sandbox, concurrency, seconds, maxRequests);
      const figures: BenchFigure[] = [
        ...indexFigures(),
        {
          label: `start-up with ${locations} x ${calls} calls (generate + index + certificate)`,
          value: startMs,
          unit: 'ms',
        },
        { label: 'heap held by the data set', value: heapMb, unit: 'MB' },
        { label: 'listing pages of 100 (cursor walks)', value: list.requests / list.seconds, unit: 'req/s' },
        { label: 'listing p50 latency', value: list.p50Ms, unit: 'ms' },
        { label: 'listing p99 latency', value: list.p99Ms, unit: 'ms' },
        { label: 'single-call gets', value: get.requests / get.seconds, unit: 'req/s' },
        { label: 'single-call p50 latency', value: get.p50Ms, unit: 'ms' },
        { label: 'single-call p99 latency', value: get.p99Ms, unit: 'ms' },
      ];
      return {
        name: 'sandbox (loopback HTTPS)',
        figures,
        notes: [
          `${locations} locations x ${calls} calls, seed 1; server in a worker thread, client on the main thread, HTTPS with keep-alive`,
          `${concurrency} requests in flight, ${seconds} s per scenario (at most ${maxRequests} requests); ${list.requests} listing and ${get.requests} get requests, ${list.errors + get.errors} non-200`,
        ],
      };
    } finally {
      worker.postMessage('close');
      await once(worker, 'exit');
    }
  },
};
