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
 * Knobs (env): BENCH_FRESH_LOCATIONS (100), BENCH_FRESH_INTERVAL_MS (10000), BENCH_FRESH_WINDOW_S (25),
 * BENCH_FRESH_UPDATES (updates/s, 4), BENCH_FRESH_CREATES (creations/s, 1), BENCH_FRESH_RPS (20), BENCH_FRESH_LIMIT
 * (0: none; else a hidden limit in requests/s per access token, a token bucket of one second's requests answering
 * 429 with Retry-After, not announced: issue 39's table cases), BENCH_FRESH_RESET_FORM (unset: the limit announces
 * nothing; `delta-seconds`, `epoch-seconds` or `epoch-ms`: its answers carry X-RateLimit-Limit/-Remaining/-Reset,
 * the reset written in that form, as in issue 39's case "resets in epoch ms"). With 5 changes/s
 * a window holds about 125 changes, so its p99 is not simply its slowest change (with 60, it was); the request
 * load (10 listings/s for 100 locations at a 10 s interval, 5 single-call GETs/s) stays under the limit.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { Kafka, logLevel } from 'kafkajs';
import { applyKafkajsIdleTimerFix } from '../src/kafka/client/kafkajs-idle-timer-fix.js';
import { provideStack } from '../tools/devstack/stack-provider.js';
import { silentLogger } from '../src/logging/logger.js';
import { ConnectorMetrics } from '../src/metrics/metrics.js';
import { ConnectorRuntime } from '../src/runtime/connector.js';
import { SOURCE_HEADERS } from '../src/kafka/records/source-headers.js';
import { pollPhase } from '../src/sync/scheduler/poll-phase.js';
import { benchConfig } from './connector.js';
import { startSandboxChild } from './sandbox-child.js';
import { atMost, envInt, median, percentile, REPETITIONS, Samples } from './stats.js';
import type { BenchModule, BenchResult } from './types.js';

export interface Arrival {
  locationUid: string;
  updatedAtMs: number;
  /** The record's timestamp: the producer's clock when the connector sent it, inside its transaction. */
  sentAtMs: number;
  receivedAtMs: number;
}

/**
 * One change's delay broken down (s): waiting for its location's next scheduled poll (the first instant of
 * the location's phase after the change, poll-phase.ts: uniform in [0, interval) by design), that poll's
 * lateness to the send (the poll started late, the listing and enrichment took long), and the send to a
 * read_committed consumer (transaction commit, consumer fetch).
 */
export interface DelayParts {
  total: number;
  toScheduledPoll: number;
  pollToSend: number;
  sendToRead: number;
}

export function delayParts(arrival: Arrival, intervalMs: number): DelayParts {
  const offset = pollPhase(arrival.locationUid) * intervalMs;
  const scheduled = Math.ceil((arrival.updatedAtMs - offset) / intervalMs) * intervalMs + offset;
  return {
    total: (arrival.receivedAtMs - arrival.updatedAtMs) / 1000,
    toScheduledPoll: (scheduled - arrival.updatedAtMs) / 1000,
    pollToSend: (arrival.sentAtMs - scheduled) / 1000,
    sendToRead: (arrival.receivedAtMs - arrival.sentAtMs) / 1000,
  };
}

const fmt = (seconds: number) => seconds.toFixed(2);

/** A note on the slowest changes of all windows: where their delay went (the tail's cause). */
function slowest(parts: readonly DelayParts[]): string {
  const all = [...parts].sort((a, b) => b.total - a.total);
  const top = all.slice(0, Math.max(3, Math.ceil(all.length / 100)));
  const pooled = all.map((p) => p.total).reverse();
  return (
    `All windows pooled (${all.length} changes): p50 ${fmt(percentile(pooled, 0.5))} s, p90 ${fmt(percentile(pooled, 0.9))} s, p99 ${fmt(percentile(pooled, 0.99))} s, max ${fmt(pooled.at(-1) ?? Number.NaN)} s. ` +
    `The slowest ${top.length} (total = to scheduled poll + poll to send + send to read): ` +
    top
      .map((p) => `${fmt(p.total)} = ${fmt(p.toScheduledPoll)} + ${fmt(p.pollToSend)} + ${fmt(p.sendToRead)}`)
      .join('; ')
  );
}

export const freshnessBench: BenchModule = {
  name: 'freshness',
  async run(): Promise<BenchResult> {
    const locations = envInt('BENCH_FRESH_LOCATIONS', 100);
    const intervalMs = envInt('BENCH_FRESH_INTERVAL_MS', 10_000);
    const windowS = envInt('BENCH_FRESH_WINDOW_S', 25);
    const updates = envInt('BENCH_FRESH_UPDATES', 4);
    const creates = envInt('BENCH_FRESH_CREATES', 1);
    const rps = envInt('BENCH_FRESH_RPS', 20);
    const limit = envInt('BENCH_FRESH_LIMIT', 0);
    const resetForm = process.env['BENCH_FRESH_RESET_FORM'];
    const stack = await provideStack(['environment', 'jvm']);
    const sandbox = await startSandboxChild(locations, 1, {
      live: { updatesPerSecond: updates, createsPerSecond: creates },
      ...(limit > 0 && {
        faults: {
          rateLimit: {
            requestsPerSecond: limit,
            burst: limit,
            per: 'token',
            ...(resetForm === undefined || resetForm === ''
              ? { headers: false }
              : {
                  headers: 'x-ratelimit',
                  resetForm: resetForm as 'delta-seconds' | 'epoch-seconds' | 'epoch-ms',
                }),
          },
        },
      }),
    });
    const metrics = new ConnectorMetrics({ perLocationLabels: false });
    const gauge = metrics.registry.getSingleMetric('calls_connector_poll_effective_interval_seconds');
    const effective: number[] = [];
    const run = `bench-fresh-${Date.now().toString(36)}`;
    // The bench's own clients too: unpatched kafkajs printed TimeoutNegativeWarning (src/kafka/client/kafkajs-idle-timer-fix.ts).
    applyKafkajsIdleTimerFix();
    const kafka = new Kafka({ clientId: run, brokers: stack.brokers, logLevel: logLevel.NOTHING });
    const registry = new SchemaRegistry({ host: stack.registryUrl });
    const arrivals = new Map<string, Arrival>();
    const consumer = kafka.consumer({ groupId: `${run}-reader`, maxWaitTimeInMs: 100 });
    const s = new Samples();
    let changes = 0;
    let made = 0;
    const windows: DelayParts[][] = [];
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
        metrics,
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
            locationUid: message.headers?.[SOURCE_HEADERS.location]?.toString() ?? '',
            updatedAtMs: Date.parse(value.updatedAtIso),
            sentAtMs: Number(message.timestamp),
            receivedAtMs,
          });
        },
      });
      const start = Date.now();
      const waited = REPETITIONS * windowS * 1000 + intervalMs + 5_000;
      for (let at = 0; at < waited; at += 1_000) {
        await sleep(Math.min(1_000, waited - at));
        effective.push((await gauge?.get())?.values[0]?.value ?? Number.NaN);
      }
      stop.abort();
      await running;
      await runtime.close();
      for (let rep = 0; rep < REPETITIONS; rep++) {
        const from = start + rep * windowS * 1000;
        const to = from + windowS * 1000;
        const parts = [...arrivals.values()]
          .filter((a) => a.updatedAtMs >= from && a.updatedAtMs < to)
          .map((a) => delayParts(a, intervalMs));
        windows.push(parts);
        const delays = parts.map((p) => p.total).sort((a, b) => a - b);
        const sorted = (part: keyof DelayParts) => parts.map((p) => p[part]).sort((a, b) => a - b);
        changes += delays.length;
        s.add('delay p50 (change to read_committed)', 's', percentile(delays, 0.5));
        s.add('delay p99', 's', percentile(delays, 0.99));
        s.add('delay max', 's', delays.at(-1) ?? Number.NaN);
        s.add(
          "part p99: change to its location's scheduled poll",
          's',
          percentile(sorted('toScheduledPoll'), 0.99),
        );
        s.add(
          'part p99: scheduled poll to send (poll late or slow)',
          's',
          percentile(sorted('pollToSend'), 0.99),
        );
        s.add(
          'part p99: send to read_committed (commit, fetch)',
          's',
          percentile(sorted('sendToRead'), 0.99),
        );
        s.add('changes received in the window', 'records', delays.length);
        s.add(
          'p99 / (interval + 1 s) (goal <= 1)',
          'ratio',
          percentile(delays, 0.99) / (intervalMs / 1000 + 1),
        );
      }
      s.add('effective interval (gauge), median over the run', 's', median(effective));
      s.add('effective interval (gauge), largest over the run', 's', Math.max(...effective));
      const stats = await sandbox.stats();
      made = stats.live.updates + stats.live.creates;
    } finally {
      await consumer.disconnect().catch(() => undefined);
      await sandbox.close();
      await stack.stop();
    }
    return {
      name: `freshness: ${locations} locations, ${intervalMs / 1000} s poll interval, live changes${limit > 0 ? `, ${resetForm ? `limit ${limit} req/s, resets in ${resetForm}` : `hidden limit ${limit} req/s`}` : ''}`,
      figures: s.figures(),
      goals: [atMost('freshness: p99 ≤ interval + 1 s', 'p99 / (interval + 1 s) (goal <= 1)', 1)],
      notes: [
        slowest(windows.flat()),
        `${locations} locations, api.requestsPerSecond ${rps}, exactly-once, enrichment on; the sandbox (child process) changes ${updates} call(s)/s and creates ${creates}/s throughout.`,
        `${REPETITIONS} consecutive windows of ${windowS} s after the first round, then ${(intervalMs / 1000 + 5).toFixed(0)} s for the last changes to arrive; ${changes} changes received from the windows (median ${median(s.values('changes received in the window'))} per window, ${updates + creates}/s × ${windowS} s made); ${made} live changes made over the whole run (first round and tail included).`,
        'Delay = wall clock of a read_committed consumer receiving the record − the record updatedAt (the sandbox writes its wall clock): an upper bound of the delay to the commit.',
      ],
    };
  },
};
