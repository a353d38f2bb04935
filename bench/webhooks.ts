/**
 * Webhooks against polling (issue 33 item 9): at each size (1,000 and 10,000 locations by default), side by side in
 * one run, arms that each have a sandbox of their own (a child process) changing one call per second and enforcing a
 * hidden limit of BENCH_WH_RPS (20) requests/s per token (429 with Retry-After, no RateLimit headers), and a connector
 * of their own (in process, api.requestsPerSecond and api.rateLimit.ceilingPerSecond at that budget, enrichment on):
 * - `polling`: no webhooks, poll.intervalMs the shortest the budget allows: every location's idle listing plus one
 *   single-call request per change must fit, so interval = locations / (budget − changes/s), rounded up to a second;
 * - `webhooks`: the sandbox delivers a signed `call.*` webhook per change to the connector's receiver, polls are the
 *   reconciliation at webhooks.reconcileIntervalMs (15 min);
 * - `webhooks, deliveries dropped` (BENCH_WH_DROP_SIZES, the first size by default): the same with BENCH_WH_DROP_PCT
 *   (20) % of deliveries dropped by the sandbox and the reconciliation interval scaled down to what the budget allows
 *   (BENCH_WH_DROP_RECONCILE_MS, default locations / 15 per s) so that "the dropped ones published within one
 *   reconciliation interval" is observable in the window.
 *
 * Each arm first waits for every location's first traversal (the warm-up: locations / budget seconds, the same in
 * every arm), then measures REPETITIONS consecutive windows, then waits a tail for the last changes (the polling
 * interval, the reconciliation interval, capped at BENCH_WH_TAIL_MAX_S). Figures per window:
 * - freshness p99: the delay from a change (its updatedAt, the sandbox's wall clock) to a read_committed consumer
 *   receiving it (as bench/freshness.ts); a change of the window never received counts with the delay it had at the
 *   end of the tail (a lower bound, so a missed change cannot make the figure look better);
 * - requests per published change (webhooks arm): the listing and single-call requests the sandbox answered in the
 *   window, less the reconciliation polls' share (one idle listing per location per reconciliation interval, spread
 *   uniformly by the poll phases), over the changes of the window received; the reconciliation rate beside it, and
 *   the total per change with it included;
 * - drop case: changes of the window whose last version was never received (lost), and the slowest delay of the
 *   changes whose delivery was dropped over the reconciliation interval.
 *
 * Knobs (env): BENCH_WH_SIZES (1000,10000), BENCH_WH_WINDOW_S (40; BENCH_WH_LARGE_WINDOW_S, 20, from 10,000 locations
 * on), BENCH_WH_CREATES (1 change/s: creations, so that each change has one delivery whose fate is known),
 * BENCH_WH_RPS (20), BENCH_WH_RECONCILE_MS (900000), BENCH_WH_DROP_PCT (20), BENCH_WH_DROP_SIZES (the first size),
 * BENCH_WH_DROP_RECONCILE_MS (locations / 15 s, at least 10 s), BENCH_WH_TAIL_MAX_S (90), BENCH_WH_PORT (24200, the
 * receivers' first port).
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { Kafka, logLevel } from 'kafkajs';
import { parseConfig } from '../src/config/load.js';
import { applyKafkajsIdleTimerFix } from '../src/kafka/client/kafkajs-idle-timer-fix.js';
import { silentLogger } from '../src/logging/logger.js';
import { ConnectorMetrics } from '../src/metrics/metrics.js';
import { ConnectorRuntime } from '../src/runtime/connector.js';
import { provideStack, type DevStack } from '../tools/devstack/stack-provider.js';
import { benchDocument } from './connector.js';
import { readFirstArrivals } from './lanes.js';
import { startSandboxChild, type SandboxChild } from './sandbox-child.js';
import { atMost, envInt, envList, percentile, REPETITIONS, Samples } from './stats.js';
import type { BenchGoal, BenchModule, BenchResult } from './types.js';

/** The environment variable the bench's receivers read their signing secret from. */
const SECRET_ENV = 'BENCH_WH_SECRET';

/** The shortest polling interval (ms, whole seconds) at which idle listings and the changes' single calls fit the budget. */
export function pollingIntervalMs(locations: number, budgetPerS: number, changesPerS: number): number {
  const spare = budgetPerS - changesPerS;
  if (!(spare > 0)) throw new RangeError('the budget must exceed the changes per second');
  return Math.ceil(locations / spare) * 1000;
}

/**
 * Requests per published change once the reconciliation polls' own requests (one idle listing per location per
 * interval, spread uniformly) are taken out of the requests answered in a window of `seconds`.
 */
export function requestsPerChange(
  requests: number,
  changes: number,
  seconds: number,
  reconcilePerS: number,
): number {
  return changes === 0 ? Number.NaN : Math.max(0, requests - reconcilePerS * seconds) / changes;
}

/** A change of a window: its delay (s) when received, else undefined. */
export interface WindowChange {
  updatedAtMs: number;
  receivedAtMs: number | undefined;
}

/** Delays (s, ascending): a change never received counts with the delay it had at `endMs` (a lower bound). */
export function delaysWithMissing(changes: readonly WindowChange[], endMs: number): number[] {
  return changes.map((c) => ((c.receivedAtMs ?? endMs) - c.updatedAtMs) / 1000).sort((a, b) => a - b);
}

type ArmKind = 'polling' | 'webhooks' | 'drop';

interface ArmSpec {
  kind: ArmKind;
  locations: number;
  rps: number;
  creates: number;
  /** The live (polling) or reconciliation (webhooks) interval. */
  intervalMs: number;
  dropRate: number;
  port: number;
  windowS: number;
  tailMaxS: number;
}

interface Received {
  updatedAtMs: number;
  receivedAtMs: number;
}

interface ArmResult {
  figures: Array<{ label: string; unit: string; values: number[] }>;
  notes: string[];
}

function armLabel(spec: ArmSpec): string {
  const size = `${spec.locations.toLocaleString('en-US')} locations`;
  if (spec.kind === 'polling') return `${size}, polling`;
  if (spec.kind === 'webhooks') return `${size}, webhooks`;
  return `${size}, webhooks, ${Math.round(spec.dropRate * 100)} % dropped`;
}

/** Labels of the figures that goals judge (one function, so a goal cannot name a label the arm does not add). */
export const labels = {
  p99: (arm: string) => `${arm}: freshness p99`,
  perChange: (arm: string) => `${arm}: requests per published change (reconciliation excluded)`,
  lost: (arm: string) => `${arm}: changes lost`,
  droppedSlowest: (arm: string) => `${arm}: slowest dropped change / reconciliation interval`,
};

async function runArm(spec: ArmSpec, stack: DevStack, secret: string): Promise<ArmResult> {
  const label = armLabel(spec);
  const webhooks = spec.kind !== 'polling';
  const path = '/webhooks/calls';
  const sandbox: SandboxChild = await startSandboxChild(spec.locations, 0, {
    live: { updatesPerSecond: 0, createsPerSecond: spec.creates },
    faults: { rateLimit: { requestsPerSecond: spec.rps, burst: spec.rps, per: 'token', headers: false } },
    ...(webhooks && {
      webhooks: {
        secret,
        targets: [`http://127.0.0.1:${spec.port}${path}`],
        faults: { rates: { drop: spec.dropRate } },
      },
    }),
  });
  const run = `bench-wh-${spec.kind}-${spec.locations}-${Date.now().toString(36)}`;
  const kafka = new Kafka({ clientId: run, brokers: stack.brokers, logLevel: logLevel.NOTHING });
  const registry = new SchemaRegistry({ host: stack.registryUrl });
  const consumer = kafka.consumer({ groupId: `${run}-reader`, maxWaitTimeInMs: 100 });
  const arrivals = new Map<string, Received>();
  /** Delivery id -> uid and whether it was dropped (the sandbox keeps its last 1000: read every few seconds). */
  const deliveries = new Map<string, { uid: string; dropped: boolean }>();
  const figures = new Map<string, { unit: string; values: number[] }>();
  const add = (name: string, unit: string, value: number): void => {
    const entry = figures.get(name) ?? { unit, values: [] };
    entry.values.push(value);
    figures.set(name, entry);
  };
  const notes: string[] = [];
  try {
    const document = benchDocument({
      run,
      sandbox: sandbox.ready,
      caFile: sandbox.caFile,
      stack,
      api: { requestsPerSecond: spec.rps, rateLimit: { ceilingPerSecond: spec.rps }, enrich: true },
      poll: { intervalMs: spec.intervalMs },
      // No history to split from (the locations start empty): no split check, so the warm-up is one listing each.
      lanes: { enabled: false },
    });
    const config = parseConfig(
      webhooks
        ? {
            ...document,
            webhooks: {
              enabled: true,
              host: '127.0.0.1',
              port: spec.port,
              path,
              reconcileIntervalMs: spec.intervalMs,
              signature: { secretEnv: [SECRET_ENV] },
            },
          }
        : document,
      {},
    );
    const runtime = await ConnectorRuntime.start({
      config,
      logger: silentLogger(),
      metrics: new ConnectorMetrics({ perLocationLabels: false }),
    });
    await consumer.connect();
    await consumer.subscribe({ topic: run, fromBeginning: true });
    const stop = new AbortController();
    const startedAt = Date.now();
    const running = runtime.run(stop.signal);
    await readFirstArrivals(consumer, registry, arrivals);
    // Warm-up: every location's first traversal (a full round of listings at the budget).
    const warmUpLimitMs = ((spec.locations / spec.rps) * 3 + 120) * 1000;
    while (runtime.status().some((l) => l.totals.traversalsCompleted < 1)) {
      if (Date.now() - startedAt > warmUpLimitMs) throw new Error(`${label}: the warm-up did not end`);
      await sleep(500);
    }
    const warmUpS = (Date.now() - startedAt) / 1000;
    const readDeliveries = async (): Promise<void> => {
      if (!webhooks) return;
      for (const d of (await sandbox.webhooks()).deliveries)
        deliveries.set(d.id, { uid: d.uid, dropped: d.state === 'dropped' });
    };
    const windowMs = spec.windowS * 1000;
    const from = Date.now();
    const counts: Array<{ list: number; get: number; refused: number }> = [];
    const count = async (): Promise<void> => {
      const s = await sandbox.stats();
      counts.push({ list: s.listRequests, get: s.getRequests, refused: s.faults.rateLimited });
    };
    await count();
    for (let rep = 0; rep < REPETITIONS; rep++) {
      const end = from + (rep + 1) * windowMs;
      while (Date.now() < end) {
        await readDeliveries();
        await sleep(Math.min(3_000, Math.max(0, end - Date.now())));
      }
      await count();
    }
    const to = Date.now();
    // The last changes: a nudged poll's, or the next poll's (polling) or reconciliation's (drop case).
    const tailS = spec.kind === 'webhooks' ? 10 : Math.min(spec.tailMaxS, spec.intervalMs / 1000 + 10);
    const tailEnd = to + tailS * 1000;
    while (Date.now() < tailEnd) {
      await readDeliveries();
      await sleep(Math.min(3_000, Math.max(0, tailEnd - Date.now())));
    }
    const observedTo = Date.now();
    const truth = await sandbox.truth();
    stop.abort();
    await running;
    await runtime.close();

    // The window's changes: every version received, and every current version never received.
    const changes = new Map<string, WindowChange & { uid: string }>();
    for (const [key, a] of arrivals)
      changes.set(key, {
        uid: key.split('@')[0] ?? '',
        updatedAtMs: a.updatedAtMs,
        receivedAtMs: a.receivedAtMs,
      });
    for (const key of truth)
      if (!changes.has(key)) {
        const [uid = '', iso = ''] = key.split('@');
        changes.set(key, { uid, updatedAtMs: Date.parse(iso), receivedAtMs: undefined });
      }
    const droppedUids = new Set([...deliveries.values()].filter((d) => d.dropped).map((d) => d.uid));
    const reconcilePerS = webhooks ? spec.locations / (spec.intervalMs / 1000) : 0;
    let windowChanges = 0;
    let missing = 0;
    const droppedDelays: number[] = [];
    for (let rep = 0; rep < REPETITIONS; rep++) {
      const a = from + rep * windowMs;
      const b = a + windowMs;
      const inWindow = [...changes.values()].filter((c) => c.updatedAtMs >= a && c.updatedAtMs < b);
      const delays = delaysWithMissing(inWindow, observedTo);
      const received = inWindow.filter((c) => c.receivedAtMs !== undefined).length;
      windowChanges += inWindow.length;
      missing += inWindow.length - received;
      add(labels.p99(label), 's', percentile(delays, 0.99));
      add(`${label}: freshness p50`, 's', percentile(delays, 0.5));
      const before = counts[rep];
      const after = counts[rep + 1];
      if (before !== undefined && after !== undefined) {
        const requests = after.list - before.list + (after.get - before.get);
        add(`${label}: requests answered`, 'req/s', requests / spec.windowS);
        add(`${label}: 429 answers (the hidden limit)`, 'req', after.refused - before.refused);
        if (spec.kind === 'webhooks') {
          add(
            labels.perChange(label),
            'req',
            requestsPerChange(requests, received, spec.windowS, reconcilePerS),
          );
          add(
            `${label}: requests per published change (reconciliation included)`,
            'req',
            requests / received,
          );
          add(
            `${label}: single-call requests per published change`,
            'req',
            (after.get - before.get) / received,
          );
        }
      }
      if (spec.kind === 'drop') {
        add(labels.lost(label), 'changes', inWindow.length - received);
        const dropped = inWindow.filter((c) => droppedUids.has(c.uid));
        add(`${label}: changes whose delivery was dropped`, 'changes', dropped.length);
        const slowest = Math.max(0, ...delaysWithMissing(dropped, observedTo));
        droppedDelays.push(slowest);
        add(labels.droppedSlowest(label), 'ratio', slowest / (spec.intervalMs / 1000));
      }
    }
    if (webhooks) add(`${label}: reconciliation polls' own rate`, 'req/s', reconcilePerS);
    notes.push(
      `${label}: ${spec.kind === 'polling' ? 'poll.intervalMs' : 'webhooks.reconcileIntervalMs'} ${spec.intervalMs / 1000} s; warm-up (every location's first traversal) ${warmUpS.toFixed(0)} s; ${REPETITIONS} windows of ${spec.windowS} s, then ${((observedTo - to) / 1000).toFixed(0)} s for the last changes; ${windowChanges} changes in the windows, ${missing} not received by the end (counted with their delay at the end: a lower bound)${webhooks ? `; ${deliveries.size} deliveries seen, ${droppedUids.size} dropped` : ''}.`,
    );
  } finally {
    await consumer.disconnect().catch(() => undefined);
    await sandbox.close();
  }
  return {
    figures: [...figures].map(([label, { unit, values }]) => ({ label, unit, values })),
    notes,
  };
}

export const webhooksBench: BenchModule = {
  name: 'webhooks',
  async run(): Promise<BenchResult> {
    const sizes = envList('BENCH_WH_SIZES', [1_000, 10_000]);
    const windowS = envInt('BENCH_WH_WINDOW_S', 40);
    const largeWindowS = envInt('BENCH_WH_LARGE_WINDOW_S', 20);
    const creates = envInt('BENCH_WH_CREATES', 1);
    const rps = envInt('BENCH_WH_RPS', 20);
    const reconcileMs = envInt('BENCH_WH_RECONCILE_MS', 15 * 60_000);
    const dropRate = envInt('BENCH_WH_DROP_PCT', 20) / 100;
    const dropSizes = envList('BENCH_WH_DROP_SIZES', sizes.slice(0, 1));
    const tailMaxS = envInt('BENCH_WH_TAIL_MAX_S', 90);
    const firstPort = envInt('BENCH_WH_PORT', 24_200);
    const secret = `whsec_${randomBytes(24).toString('base64')}`;
    process.env[SECRET_ENV] = secret;
    applyKafkajsIdleTimerFix();
    const stack = await provideStack(['environment', 'jvm']);
    const s = new Samples();
    const notes: string[] = [];
    const goals: BenchGoal[] = [];
    try {
      for (const [i, locations] of sizes.entries()) {
        const base = {
          locations,
          rps,
          creates,
          dropRate: 0,
          windowS: locations >= 10_000 ? largeWindowS : windowS,
          tailMaxS,
        };
        const arms: ArmSpec[] = [
          { ...base, kind: 'polling', intervalMs: pollingIntervalMs(locations, rps, creates), port: 0 },
          { ...base, kind: 'webhooks', intervalMs: reconcileMs, port: firstPort + 3 * i },
        ];
        if (dropSizes.includes(locations))
          arms.push({
            ...base,
            kind: 'drop',
            dropRate,
            intervalMs: envInt('BENCH_WH_DROP_RECONCILE_MS', Math.max(10, Math.ceil(locations / 15)) * 1000),
            port: firstPort + 3 * i + 1,
          });
        process.stdout.write(
          `  webhooks: ${locations} locations, arms ${arms.map((a) => a.kind).join(', ')}\n`,
        );
        // Side by side: every arm at once, each with its own sandbox (its own hidden limit) and connector.
        const results = await Promise.all(arms.map((arm) => runArm(arm, stack, secret)));
        for (const r of results) {
          for (const f of r.figures) for (const v of f.values) s.add(f.label, f.unit, v);
          notes.push(...r.notes);
        }
        for (const arm of arms) {
          const label = armLabel(arm);
          if (arm.kind === 'webhooks')
            goals.push(
              atMost(`webhooks, ${locations} locations: freshness p99 ≤ 2 s`, labels.p99(label), 2),
              atMost(
                `webhooks, ${locations} locations: ≤ 2.5 requests per published change`,
                labels.perChange(label),
                2.5,
              ),
            );
          if (arm.kind === 'drop')
            goals.push(
              atMost(`webhooks, ${Math.round(dropRate * 100)} % dropped: 0 lost`, labels.lost(label), 0),
              atMost(
                `webhooks, ${Math.round(dropRate * 100)} % dropped: dropped ones published within one reconciliation interval`,
                labels.droppedSlowest(label),
                1,
              ),
            );
        }
      }
    } finally {
      await stack.stop();
    }
    notes.push(
      `Each arm: its own sandbox (child process) creating ${creates} call(s)/s with a hidden limit of ${rps} requests/s per token (429 + Retry-After, no RateLimit headers), its own connector in this process (api.requestsPerSecond and api.rateLimit.ceilingPerSecond ${rps}, enrichment on, exactly-once, lanes off: the locations start empty); the arms of a size run at the same time.`,
      'Requests per published change: listing and single-call requests answered in a window, less the reconciliation polls expected in it (locations / reconcileIntervalMs, each an idle listing), over the changes of the window received.',
    );
    return {
      name: `webhooks: against polling, ${sizes.join(' and ')} locations, ${creates} change/s, ${rps} req/s hidden limit`,
      figures: s.figures(),
      goals,
      notes,
    };
  },
};
