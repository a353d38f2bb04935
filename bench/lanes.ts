/**
 * Lanes (issue 23): the present first while history backfills. One connector starts on locations with a large
 * history under a request budget (api.requestsPerSecond, and api.rateLimit.ceilingPerSecond so that the learned rate
 * does not grow past it) while the sandbox keeps changing and creating calls.
 * Every location is split at T0 (docs/sync.md "Lanes"); its live lane is polled every interval while its
 * history lane reads with the budget the live lanes leave.
 *
 * Figures, per window (REPETITIONS windows during the backfill, then as many of the same length once every
 * location caught up):
 * - live freshness: the delay from a change (its updatedAt, the sandbox's wall clock) to a read_committed
 *   consumer receiving it (as bench/freshness.ts measures it); goal: p99 during the backfill within 10% of p99
 *   without one (plus 0.1 s, the consumer's fetch wait, so that two sub-second p99s are not judged on noise);
 * - backfill use of the budget: the requests the history lanes made per second (all requests during the backfill,
 *   from the first split to the last history lane's merge, less the live lanes' rate, measured once caught up) over what the live lanes leave (requestsPerSecond less
 *   that rate); goal >= 0.9.
 *
 * Knobs (env): BENCH_LANES_LOCATIONS (40), BENCH_LANES_CALLS (per location, 300), BENCH_LANES_RPS (200),
 * BENCH_LANES_INTERVAL_MS (5000), BENCH_LANES_WINDOW_S (after the backfill, 10), BENCH_LANES_UPDATES (4/s),
 * BENCH_LANES_CREATES (1/s), BENCH_LANES_IN_FLIGHT (poll.maxLocationsInFlight, 8), BENCH_LANES_BACKFILL_SHARE_PCT
 * (api.rateLimit.backfillShare in percent, 25), BENCH_LANES_LOG (a file for the connector's debug log; none by default).
 */
import { createWriteStream } from 'node:fs';
import { cpus } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { Kafka, logLevel, type Consumer } from 'kafkajs';
import { applyKafkajsIdleTimerFix } from '../src/kafka/client/kafkajs-idle-timer-fix.js';
import { SOURCE_HEADERS } from '../src/kafka/records/source-headers.js';
import { createLogger, silentLogger } from '../src/logging/logger.js';
import { ConnectorMetrics } from '../src/metrics/metrics.js';
import { ConnectorRuntime } from '../src/runtime/connector.js';
import { provideStack } from '../tools/devstack/stack-provider.js';
import { benchConfig } from './connector.js';
import { startSandboxChild, type SandboxChild } from './sandbox-child.js';
import { atLeast, atMost, envInt, percentile, REPETITIONS, Samples } from './stats.js';
import type { BenchModule, BenchResult } from './types.js';

/** A call version's first arrival: its updatedAt (the sandbox's wall clock) and when it was read. */
export interface Arrival {
  updatedAtMs: number;
  receivedAtMs: number;
}

/**
 * Runs `consumer` (subscribed) so that it records, by `uid@updatedAt`, when each call version was first received:
 * the wall clock of the read, and the version's updatedAt (the sandbox's wall clock). With `reRead`, a record a
 * backfill signal re-read (it carries the signal header) is handed to it by version instead: a re-read is no
 * arrival of a change.
 */
export async function readFirstArrivals(
  consumer: Consumer,
  registry: SchemaRegistry,
  arrivals: Map<string, Arrival>,
  reRead?: (version: string) => void,
): Promise<void> {
  await consumer.run({
    eachMessage: async ({ message }) => {
      const receivedAtMs = Date.now();
      if (message.value === null) return;
      const value = (await registry.decode(message.value)) as { uid: string; updatedAtIso: string };
      const key = `${value.uid}@${value.updatedAtIso}`;
      if (reRead !== undefined && message.headers?.[SOURCE_HEADERS.signal] !== undefined) reRead(key);
      else if (!arrivals.has(key))
        arrivals.set(key, { updatedAtMs: Date.parse(value.updatedAtIso), receivedAtMs });
    },
  });
}

/** Requests the sandbox answered so far (listings and single calls). */
export async function requestsSoFar(sandbox: SandboxChild): Promise<number> {
  const stats = await sandbox.stats();
  return stats.listRequests + stats.getRequests;
}

/** The machine's CPU time so far (ms, all cores): busy and in all. */
function machineCpuMs(): { busy: number; total: number } {
  let busy = 0;
  let total = 0;
  for (const { times } of cpus()) {
    const all = times.user + times.nice + times.sys + times.irq + times.idle;
    total += all;
    busy += all - times.idle;
  }
  return { busy, total };
}

/** p99 of the delays (s) of the changes whose updatedAt falls in [from, to). */
export function p99Between(
  arrivals: ReadonlyMap<string, Arrival>,
  from: number,
  to: number,
): { p99: number; count: number } {
  const delays = [...arrivals.values()]
    .filter((a) => a.updatedAtMs >= from && a.updatedAtMs < to)
    .map((a) => (a.receivedAtMs - a.updatedAtMs) / 1000)
    .sort((a, b) => a - b);
  return { p99: percentile(delays, 0.99), count: delays.length };
}

export const lanesBench: BenchModule = {
  name: 'lanes',
  async run(): Promise<BenchResult> {
    const locations = envInt('BENCH_LANES_LOCATIONS', 40);
    const calls = envInt('BENCH_LANES_CALLS', 300);
    const rps = envInt('BENCH_LANES_RPS', 200);
    const intervalMs = envInt('BENCH_LANES_INTERVAL_MS', 5_000);
    const windowS = envInt('BENCH_LANES_WINDOW_S', 10);
    const updates = envInt('BENCH_LANES_UPDATES', 4);
    const creates = envInt('BENCH_LANES_CREATES', 1);
    const inFlight = envInt('BENCH_LANES_IN_FLIGHT', 8);
    // api.rateLimit.backfillShare, in percent (the default 25).
    const backfillShare = envInt('BENCH_LANES_BACKFILL_SHARE_PCT', 25) / 100;
    const logFile = process.env.BENCH_LANES_LOG;
    const stack = await provideStack(['environment', 'jvm']);
    const sandbox = await startSandboxChild(locations, calls, {
      live: { updatesPerSecond: updates, createsPerSecond: creates },
    });
    const run = `bench-lanes-${Date.now().toString(36)}`;
    applyKafkajsIdleTimerFix();
    const kafka = new Kafka({ clientId: run, brokers: stack.brokers, logLevel: logLevel.NOTHING });
    const registry = new SchemaRegistry({ host: stack.registryUrl });
    const arrivals = new Map<string, Arrival>();
    const consumer = kafka.consumer({ groupId: `${run}-reader`, maxWaitTimeInMs: 100 });
    const s = new Samples();
    const notes: string[] = [];
    try {
      const config = benchConfig({
        run,
        sandbox: sandbox.ready,
        caFile: sandbox.caFile,
        stack,
        // The budget: the learned rate starts at rps and may not grow past it (a hidden API limit of rps).
        api: { requestsPerSecond: rps, rateLimit: { ceilingPerSecond: rps, backfillShare }, enrich: true },
        poll: { intervalMs, maxLocationsInFlight: inFlight },
      });
      const runtime = await ConnectorRuntime.start({
        config,
        logger:
          logFile === undefined
            ? silentLogger()
            : createLogger({ level: 'debug', format: 'json', destination: createWriteStream(logFile) }),
        metrics: new ConnectorMetrics({ perLocationLabels: false }),
      });
      // The runtime created the calls topic at start: subscribe before it publishes anything.
      await consumer.connect();
      await consumer.subscribe({ topic: run, fromBeginning: true });
      const stop = new AbortController();
      const started = Date.now();
      const running = runtime.run(stop.signal);
      await readFirstArrivals(consumer, registry, arrivals);
      // The first location split; the backfill runs from then until every lane merged (with many locations, the
      // first live polls of the others overlap the first history turns).
      while (!runtime.status().some((l) => l.backfill !== null)) await sleep(50);
      const splitAt = Date.now();
      const requestsAtSplit = await requestsSoFar(sandbox);
      const cpuAtSplit = machineCpuMs();
      const connectorCpuAtSplit = process.cpuUsage();
      // Where the budget goes: requests answered per second, sampled once a second through the backfill.
      const perSecond: number[] = [];
      let lastSample = { at: splitAt, requests: requestsAtSplit };
      let split = 0;
      // The last history lane's merge: the backfill's end. Every location's first traversal may complete up to
      // an interval later (a live lane completes one at its next poll), which is not history's time.
      let merged: { at: number; requests: number } | null = null;
      while (runtime.status().some((l) => l.totals.traversalsCompleted < 1)) {
        const splitNow = runtime.status().filter((l) => l.backfill !== null).length;
        split = Math.max(split, splitNow);
        if (splitNow > 0) merged = null;
        else if (merged === null) merged = { at: Date.now(), requests: await requestsSoFar(sandbox) };
        await sleep(100);
        if (Date.now() - lastSample.at >= 1000) {
          const sample = { at: Date.now(), requests: await requestsSoFar(sandbox) };
          perSecond.push((sample.requests - lastSample.requests) / ((sample.at - lastSample.at) / 1000));
          lastSample = sample;
        }
      }
      const caughtUpAt = Date.now();
      const end = merged ?? { at: caughtUpAt, requests: await requestsSoFar(sandbox) };
      const requestsDuringBackfill = end.requests - requestsAtSplit;
      const cpuAtMerge = machineCpuMs();
      const connectorCpu = process.cpuUsage(connectorCpuAtSplit);
      // No backfill: REPETITIONS windows of windowS once caught up; the live lanes' request rate meanwhile.
      await sleep(intervalMs);
      const liveFrom = Date.now();
      const liveRequests0 = await requestsSoFar(sandbox);
      await sleep(REPETITIONS * windowS * 1000);
      const liveRate = ((await requestsSoFar(sandbox)) - liveRequests0) / ((Date.now() - liveFrom) / 1000);
      await sleep(intervalMs + 5_000); // the last changes arrive
      stop.abort();
      await running;
      await runtime.close();

      // During the backfill: from one interval after the split (changes made before it wait for the first poll
      // of a location that was not split yet) to the end, in REPETITIONS windows.
      const backfillFrom = splitAt + intervalMs;
      const span = Math.max(0, caughtUpAt - backfillFrom) / REPETITIONS;
      const backfillSeconds = (caughtUpAt - started) / 1000;
      const used = requestsDuringBackfill / ((end.at - splitAt) / 1000) - liveRate;
      const left = rps - liveRate;
      for (let rep = 0; rep < REPETITIONS; rep++) {
        const during = p99Between(arrivals, backfillFrom + rep * span, backfillFrom + (rep + 1) * span);
        const after = p99Between(
          arrivals,
          liveFrom + rep * windowS * 1000,
          liveFrom + (rep + 1) * windowS * 1000,
        );
        s.add('live freshness p99 during the backfill', 's', during.p99);
        s.add('live freshness p99 without a backfill', 's', after.p99);
        s.add('changes in the window during / after', 'records', during.count + after.count);
        s.add('p99 during / (p99 without + 0.1 s) (goal <= 1.1)', 'ratio', during.p99 / (after.p99 + 0.1));
      }
      s.add('backfill duration', 's', backfillSeconds);
      s.add('live lanes request rate (caught up)', 'req/s', liveRate);
      s.add('history request rate during the backfill', 'req/s', used);
      s.add('history rate / budget the live lanes leave (goal >= 0.9)', 'ratio', used / left);
      const machineBusy = (cpuAtMerge.busy - cpuAtSplit.busy) / (cpuAtMerge.total - cpuAtSplit.total);
      s.add('machine CPU busy during the backfill (all cores)', '%', 100 * machineBusy);
      s.add(
        'bench process CPU (the connector and its reader) during the backfill, of one core',
        '%',
        (100 * (connectorCpu.user + connectorCpu.system)) / 1000 / (caughtUpAt - splitAt),
      );
      const tenths = Array.from({ length: 10 }, (_, i) => {
        const part = perSecond.slice(
          Math.floor((i * perSecond.length) / 10),
          Math.floor(((i + 1) * perSecond.length) / 10),
        );
        return part.length === 0 ? 0 : part.reduce((a, b) => a + b, 0) / part.length;
      });
      notes.push(
        `${locations} locations × ${calls} calls of history, enrichment on (one GET per call), api.requestsPerSecond and api.rateLimit.ceilingPerSecond ${rps} (the budget), poll.intervalMs ${intervalMs}, poll.maxLocationsInFlight ${inFlight}, api.rateLimit.backfillShare ${backfillShare}, exactly-once; the sandbox (child process) changes ${updates} call(s)/s and creates ${creates}/s throughout.`,
        `${split} of ${locations} locations split at T0 at once (the most seen); the backfill took ${backfillSeconds.toFixed(1)} s; live windows during it: ${REPETITIONS} × ${(span / 1000).toFixed(1)} s from one interval after the first split; without: ${REPETITIONS} × ${windowS} s from one interval after every lane merged.`,
        `The last history lane merged ${((end.at - splitAt) / 1000).toFixed(1)} s after the first split, the backfill's span in the budget figures; every location had completed a traversal ${((caughtUpAt - end.at) / 1000).toFixed(1)} s later.`,
        `Requests answered per second, by tenth of the backfill: ${tenths.map((r) => r.toFixed(0)).join(', ')} (budget ${rps}; the live lanes alone ${liveRate.toFixed(0)}).`,
        "Budget use: (requests answered by the sandbox from the first split to the merge of the last history lane, per second, less the live lanes' rate once caught up) / (requestsPerSecond less that rate). The live rate includes the single calls of the changes; the tail (the last lanes reading alone) counts against it.",
      );
    } finally {
      await consumer.disconnect().catch(() => undefined);
      await sandbox.close();
      await stack.stop();
    }
    return {
      name: `lanes: live freshness during a backfill, ${locations} locations, ${rps} req/s`,
      figures: s.figures(),
      goals: [
        atMost(
          'lanes: live freshness p99 during a backfill within 10% of without',
          'p99 during / (p99 without + 0.1 s) (goal <= 1.1)',
          1.1,
        ),
        atLeast(
          'lanes: backfill uses >= 0.9 of the budget the live lanes leave',
          'history rate / budget the live lanes leave (goal >= 0.9)',
          0.9,
        ),
      ],
      notes,
    };
  },
};
