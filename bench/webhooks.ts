/**
 * Webhooks against polling (issue 33 item 9), side by side in one run: every arm at once, each with a sandbox of its
 * own (a child process creating BENCH_WH_CREATES call per second on random locations and enforcing a hidden limit
 * of BENCH_WH_RPS (20) requests/s per token: 429 with Retry-After, no RateLimit headers) and a connector of its own
 * (in this process; api.requestsPerSecond and api.rateLimit.ceilingPerSecond at that budget, enrichment on,
 * exactly-once, lanes off: the locations start empty). At each size (BENCH_WH_SIZES, 1,000 and 10,000):
 * - `polling`: no webhooks, poll.intervalMs the shortest the budget allows: every location's idle listing plus one
 *   single-call request per change must fit, so interval = locations / (budget − changes/s), rounded up to a second;
 * - `webhooks`: the sandbox delivers a signed `call.*` webhook per change to the connector's receiver; polls are the
 *   reconciliation, every BENCH_WH_RECONCILE_MS (15 min).
 * And at BENCH_WH_DROP_SIZES (1,000): `webhooks, 20 % dropped`: BENCH_WH_DROP_PCT (20) % of the deliveries dropped
 * by the sandbox, with a short reconciliation interval (BENCH_WH_DROP_RECONCILE_MS, 60 s) so that "the dropped ones
 * published within one reconciliation interval" is seen in the run (the goal is relative to the interval).
 *
 * Warm-up: a connector polls every location at once when it starts (due at once, whatever the interval), so each
 * arm waits for every location's first traversal (LocationStatus.totals.traversalsCompleted; locations / budget
 * seconds, 500 s at 10,000 locations and 20 req/s: the budget, not the machine, sets it). A webhook arm then also
 * waits for the backlog to drain (warmUpState: locations waiting past their due time): a location traversed early
 * in that first round is due again at the next instant of its phase, which for a share of them (round /
 * interval / 2, 29 % at 10,000 locations) comes before the round ends, and nudges wait behind those overdue polls
 * (sync/scheduler/nudges.ts: "after those due already"). Measured at once, the first run's 10,000-location webhooks arm had
 * p99 69 s and 64 requests per change, all of it that catch-up. Bounded by warmUpBoundMs: past the bound the arm
 * measures anyway and its note says what was left. The changes made during the warm-up give a figure of their own
 * (freshness p99 during the warm-up): what a start costs the webhooks.
 * Then REPETITIONS consecutive windows (BENCH_WH_WINDOW_S, 40 s; BENCH_WH_LARGE_WINDOW_S, 30 s, from 10,000
 * locations on), then a tail for the last changes (webhooks: 10 s; polling: its interval + 10 s, at most
 * BENCH_WH_TAIL_MAX_S, 60 s; the drop case: its reconciliation interval + 15 s). Figures per window
 * (webhooks-figures.ts):
 * - freshness p99: the delay from a change (its updatedAt, the sandbox's wall clock) to a read_committed consumer
 *   receiving it; a change never received counts with the delay it had at the end (a lower bound: polling at
 *   10,000 locations finds most changes only after the run);
 * - requests per published change: the listings and single calls the sandbox answered in the window, less the
 *   reconciliation polls due in it (counted from the locations' poll phases: exact, not an estimate), over the
 *   changes of the window received; with its listings and single calls apart, the reconciliation's own rate and
 *   the total per change reconciliation included beside it;
 * - drop case: changes of the window never received (lost), and the slowest delay of those whose delivery was
 *   dropped, over the reconciliation interval.
 *
 * Failure: the first arm that fails stops every other (a shared abort), each arm stops its connector, consumer and
 * sandbox process whatever happened, and the module returns what the arms measured with the failure in its notes,
 * so a failed run leaves no process behind and still writes its report.
 *
 * Other knobs: BENCH_WH_PORT (25100): the receivers' first port, one per webhook arm.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { Kafka, logLevel, type Consumer } from 'kafkajs';
import { parseConfig } from '../src/config/load.js';
import { applyKafkajsIdleTimerFix } from '../src/kafka/client/kafkajs-idle-timer-fix.js';
import { silentLogger } from '../src/logging/logger.js';
import { ConnectorMetrics } from '../src/metrics/metrics.js';
import { ConnectorRuntime } from '../src/runtime/connector.js';
import { pollPhase } from '../src/sync/scheduler/poll-phase.js';
import { provideStack, type DevStack } from '../tools/devstack/stack-provider.js';
import { benchDocument } from './connector.js';
import { readFirstArrivals } from './lanes.js';
import { startSandboxChild, type SandboxChild } from './sandbox-child.js';
import { atMost, envInt, envList, percentile, REPETITIONS, Samples } from './stats.js';
import type { BenchGoal, BenchModule, BenchResult } from './types.js';
import {
  delaysWithMissing,
  pollingIntervalMs,
  reconciliationPolls,
  warmedUp,
  warmUpBoundMs,
  warmUpState,
  windowFigures,
  type WindowChange,
} from './webhooks-figures.js';

/** The environment variable the bench's receivers read their signing secret from. */
const SECRET_ENV = 'BENCH_WH_SECRET';
const RECEIVER_PATH = '/webhooks/calls';

type ArmKind = 'polling' | 'webhooks' | 'drop';

interface ArmSpec {
  kind: ArmKind;
  locations: number;
  rps: number;
  creates: number;
  /** The live (polling) or reconciliation (webhooks) interval. */
  intervalMs: number;
  dropRate: number;
  /** The receiver's port (webhook arms). */
  port: number;
  windowS: number;
  tailS: number;
}

/** What every arm shares: the stack, the secret, the abort that stops them all, where figures and notes go. */
interface ArmContext {
  stack: DevStack;
  secret: string;
  signal: AbortSignal;
  samples: Samples;
  notes: string[];
}

function armLabel(spec: Pick<ArmSpec, 'kind' | 'locations' | 'dropRate'>): string {
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

function say(line: string): void {
  process.stdout.write(`  webhooks: ${line}\n`);
}

/** Resolves with `promise`'s outcome ignored, or after `ms` (a stop that hangs must not hang the bench). */
async function bounded(promise: Promise<unknown>, ms: number): Promise<void> {
  const timeout = new AbortController();
  await Promise.race([
    promise.catch(() => undefined),
    sleep(ms, undefined, { signal: timeout.signal }).catch(() => undefined),
  ]);
  timeout.abort();
}

function isAbort(error: unknown): boolean {
  return error instanceof Error && error.name === 'AbortError';
}

function connectorDocument(spec: ArmSpec, sandbox: SandboxChild, run: string, stack: DevStack) {
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
  if (spec.kind === 'polling') return document;
  return {
    ...document,
    webhooks: {
      enabled: true,
      host: '127.0.0.1',
      port: spec.port,
      path: RECEIVER_PATH,
      reconcileIntervalMs: spec.intervalMs,
      signature: { secretEnv: [SECRET_ENV] },
    },
  };
}

/**
 * One arm (see the module comment): figures and its note go to `ctx` as soon as measured. Rejects on an error of
 * its own; an abort (another arm failed) ends its waits, and it reports the windows it completed. Its connector,
 * consumer and sandbox are stopped whatever happens.
 */
async function runArm(spec: ArmSpec, ctx: ArmContext): Promise<void> {
  const webhooks = spec.kind !== 'polling';
  const sandbox = await startSandboxChild(spec.locations, 0, {
    live: { updatesPerSecond: 0, createsPerSecond: spec.creates },
    faults: { rateLimit: { requestsPerSecond: spec.rps, burst: spec.rps, per: 'token', headers: false } },
    ...(webhooks && {
      webhooks: {
        secret: ctx.secret,
        targets: [`http://127.0.0.1:${spec.port}${RECEIVER_PATH}`],
        faults: { rates: { drop: spec.dropRate } },
      },
    }),
  });
  const run = `bench-wh-${spec.kind}-${spec.locations}-${Date.now().toString(36)}`;
  const kafka = new Kafka({ clientId: run, brokers: ctx.stack.brokers, logLevel: logLevel.NOTHING });
  const consumer: Consumer = kafka.consumer({ groupId: `${run}-reader`, maxWaitTimeInMs: 100 });
  const stop = new AbortController();
  let runtime: ConnectorRuntime | undefined;
  let running: Promise<void> | undefined;
  try {
    runtime = await ConnectorRuntime.start({
      config: parseConfig(connectorDocument(spec, sandbox, run, ctx.stack), {}),
      logger: silentLogger(),
      metrics: new ConnectorMetrics({ perLocationLabels: false }),
    });
    await consumer.connect();
    await consumer.subscribe({ topic: run, fromBeginning: true });
    const startedAt = Date.now();
    running = runtime.run(stop.signal);
    const arrivals = new Map<string, { updatedAtMs: number; receivedAtMs: number }>();
    await readFirstArrivals(consumer, new SchemaRegistry({ host: ctx.stack.registryUrl }), arrivals);
    await measure(spec, ctx, { sandbox, runtime, startedAt, arrivals });
  } finally {
    stop.abort();
    if (running !== undefined) await bounded(running, 60_000);
    if (runtime !== undefined) await bounded(runtime.close(), 30_000);
    await bounded(consumer.disconnect(), 10_000);
    await sandbox.close();
  }
}

interface Measured {
  sandbox: SandboxChild;
  runtime: ConnectorRuntime;
  startedAt: number;
  arrivals: ReadonlyMap<string, { updatedAtMs: number; receivedAtMs: number }>;
}

async function measure(spec: ArmSpec, ctx: ArmContext, m: Measured): Promise<void> {
  const { sandbox, runtime, startedAt, arrivals } = m;
  const label = armLabel(spec);
  const webhooks = spec.kind !== 'polling';
  /** The uids whose delivery the sandbox dropped (it keeps its last 1000 deliveries: read every few seconds). */
  const dropped = new Set<string>();
  const readDeliveries = async (): Promise<void> => {
    if (spec.kind !== 'drop') return;
    for (const d of (await sandbox.webhooks()).deliveries) if (d.state === 'dropped') dropped.add(d.uid);
  };
  /** Waits until `untilMs`, reading the deliveries meanwhile; an abort ends it (AbortError). */
  const waitUntil = async (untilMs: number): Promise<void> => {
    while (Date.now() < untilMs) {
      await readDeliveries();
      await sleep(Math.min(3_000, Math.max(0, untilMs - Date.now())), undefined, { signal: ctx.signal });
    }
  };

  const windowMs = spec.windowS * 1000;
  const counts: Array<{ listings: number; singleCalls: number; refused: number }> = [];
  const count = async (): Promise<void> => {
    const s = await sandbox.stats();
    counts.push({ listings: s.listRequests, singleCalls: s.getRequests, refused: s.faults.rateLimited });
  };
  let from = Date.now();
  let warmUpS = 0;
  let left = { notTraversed: 0, overdue: 0 };
  let mostOverdue = 0;
  let windowsDone = 0;
  let interrupted = false;
  try {
    // Warm-up: every location's first traversal (they are all due at once when the connector starts), and for
    // a webhook arm the overdue polls after it (see the module comment).
    const bound = startedAt + warmUpBoundMs(spec.locations, spec.rps);
    let nextSay = startedAt + 30_000;
    for (;;) {
      left = warmUpState(runtime.status(), Date.now());
      mostOverdue = Math.max(mostOverdue, left.overdue);
      if (warmedUp(left, webhooks, spec.rps) || Date.now() >= bound) break;
      if (Date.now() >= nextSay) {
        say(
          `${label}: warm-up ${((Date.now() - startedAt) / 1000).toFixed(0)} s, ${left.notTraversed} not traversed yet, ${left.overdue} overdue`,
        );
        nextSay += 30_000;
      }
      await waitUntil(Date.now() + 1_000);
    }
    warmUpS = (Date.now() - startedAt) / 1000;
    say(`${label}: measuring after a warm-up of ${warmUpS.toFixed(0)} s`);
    from = Date.now();
    await count();
    for (let rep = 0; rep < REPETITIONS; rep++) {
      await waitUntil(from + (rep + 1) * windowMs);
      await count();
      windowsDone += 1;
    }
    // The last changes: a nudged poll's, or the next poll's (polling) or reconciliation's (drop case).
    await waitUntil(Date.now() + spec.tailS * 1000);
  } catch (error) {
    if (!isAbort(error)) throw error;
    interrupted = true;
  }
  const observedTo = Date.now();
  const truth = await sandbox.truth();

  // The changes: every version received, and every current version never received.
  const changes = new Map<string, WindowChange & { uid: string }>();
  for (const [key, a] of arrivals) changes.set(key, { uid: key.split('@')[0] ?? '', ...a });
  for (const key of truth)
    if (!changes.has(key)) {
      const [uid = '', iso = ''] = key.split('@');
      changes.set(key, { uid, updatedAtMs: Date.parse(iso), receivedAtMs: undefined });
    }
  const phases = webhooks ? sandbox.ready.locations.map(pollPhase) : [];
  const add = (name: string, unit: string, value: number): void =>
    ctx.samples.add(`${label}: ${name}`, unit, value);
  if (webhooks && warmUpS > 0) {
    const during = [...changes.values()].filter((c) => c.updatedAtMs >= startedAt && c.updatedAtMs < from);
    add(
      'freshness p99 during the warm-up (one value)',
      's',
      percentile(delaysWithMissing(during, observedTo), 0.99),
    );
    add('most locations overdue during the warm-up (one value)', 'locations', mostOverdue);
  }
  let emptyWindows = 0;
  let windowChanges = 0;
  let missing = 0;
  for (let rep = 0; rep < windowsDone; rep++) {
    const a = from + rep * windowMs;
    const b = a + windowMs;
    const inWindow = [...changes.values()].filter((c) => c.updatedAtMs >= a && c.updatedAtMs < b);
    const before = counts[rep];
    const after = counts[rep + 1];
    if (before === undefined || after === undefined) continue;
    const f = windowFigures({
      changes: inWindow,
      observedToMs: observedTo,
      requests: {
        listings: after.listings - before.listings,
        singleCalls: after.singleCalls - before.singleCalls,
        refused: after.refused - before.refused,
      },
      seconds: spec.windowS,
      reconcilePolls: webhooks ? reconciliationPolls(phases, spec.intervalMs, a, b) : 0,
    });
    windowChanges += inWindow.length;
    missing += f.missing;
    if (f.received === 0) {
      // No change of the window received: no per-change figure (NaN would make the median meaningless).
      emptyWindows += 1;
      if (spec.kind === 'drop') ctx.samples.add(labels.lost(label), 'changes', f.missing);
      ctx.samples.add(labels.p99(label), 's', f.p99S);
      continue;
    }
    ctx.samples.add(labels.p99(label), 's', f.p99S);
    add('freshness p50', 's', f.p50S);
    add('requests answered', 'req/s', f.requestsPerS);
    add('429 answers (the hidden limit)', 'req', after.refused - before.refused);
    if (webhooks) {
      ctx.samples.add(labels.perChange(label), 'req', f.perChange);
      add('listings per published change (reconciliation excluded)', 'req', f.listingsPerChange);
      add('single-call requests per published change', 'req', f.singleCallsPerChange);
      add("reconciliation polls' own rate", 'req/s', f.reconcilePerS);
      add('requests per published change (reconciliation included)', 'req', f.perChangeAll);
    }
    if (spec.kind === 'drop') {
      ctx.samples.add(labels.lost(label), 'changes', f.missing);
      const droppedHere = inWindow.filter((c) => dropped.has(c.uid));
      add('changes whose delivery was dropped', 'changes', droppedHere.length);
      const slowest = Math.max(0, ...delaysWithMissing(droppedHere, observedTo));
      ctx.samples.add(labels.droppedSlowest(label), 'ratio', slowest / (spec.intervalMs / 1000));
    }
  }
  ctx.notes.push(
    armNote(label, spec, webhooks, { warmUpS, left, mostOverdue, windowsDone, interrupted }) +
      `${emptyWindows > 0 ? ` ${emptyWindows} window(s) with no change received.` : ''} ${windowChanges} changes in the windows, ${missing} not received by the end (counted with their delay then: a lower bound)${spec.kind === 'drop' ? `; ${dropped.size} deliveries dropped` : ''}; ${((observedTo - from) / 1000 - windowsDone * spec.windowS).toFixed(0)} s after the last window for the last changes.`,
  );
}

/** The first part of an arm's note: its interval, its warm-up, and what was left when it ended or was interrupted. */
function armNote(
  label: string,
  spec: ArmSpec,
  webhooks: boolean,
  m: {
    warmUpS: number;
    left: { notTraversed: number; overdue: number };
    mostOverdue: number;
    windowsDone: number;
    interrupted: boolean;
  },
): string {
  const interval = `${webhooks ? 'webhooks.reconcileIntervalMs' : 'poll.intervalMs'} ${spec.intervalMs / 1000} s`;
  if (m.warmUpS === 0) return `${label}: ${interval}; interrupted during its warm-up (another arm failed).`;
  const overdue = webhooks ? ` (at most ${m.mostOverdue} locations overdue during it)` : '';
  const bound = warmedUp(m.left, webhooks, spec.rps)
    ? ''
    : ` (its bound passed with ${m.left.notTraversed} locations not traversed and ${m.left.overdue} overdue: their polls count in the windows)`;
  const stopped = m.interrupted ? ' (interrupted: another arm failed)' : '';
  return `${label}: ${interval}; warm-up ${m.warmUpS.toFixed(0)} s${overdue}${bound}; ${m.windowsDone} window(s) of ${spec.windowS} s${stopped}.`;
}

/** The arms of one run (see the module comment), their receivers on ports from `firstPort`. */
export function armsOf(knobs: {
  sizes: readonly number[];
  dropSizes: readonly number[];
  rps: number;
  creates: number;
  reconcileMs: number;
  dropReconcileMs: number;
  dropRate: number;
  windowS: number;
  largeWindowS: number;
  tailMaxS: number;
  firstPort: number;
}): ArmSpec[] {
  const arms: ArmSpec[] = [];
  let port = knobs.firstPort;
  for (const locations of knobs.sizes) {
    const base = {
      locations,
      rps: knobs.rps,
      creates: knobs.creates,
      dropRate: 0,
      windowS: locations >= 10_000 ? knobs.largeWindowS : knobs.windowS,
    };
    const pollMs = pollingIntervalMs(locations, knobs.rps, knobs.creates);
    arms.push(
      {
        ...base,
        kind: 'polling',
        intervalMs: pollMs,
        port: 0,
        tailS: Math.min(knobs.tailMaxS, pollMs / 1000 + 10),
      },
      { ...base, kind: 'webhooks', intervalMs: knobs.reconcileMs, port: port++, tailS: 10 },
    );
    if (knobs.dropSizes.includes(locations))
      arms.push({
        ...base,
        kind: 'drop',
        dropRate: knobs.dropRate,
        intervalMs: knobs.dropReconcileMs,
        port: port++,
        tailS: knobs.dropReconcileMs / 1000 + 15,
      });
  }
  return arms;
}

/** The goals an arm's figures judge (issue 33 item 9). */
function goalsOf(arm: ArmSpec): BenchGoal[] {
  const label = armLabel(arm);
  const size = `${arm.locations.toLocaleString('en-US')} locations`;
  const pct = `${Math.round(arm.dropRate * 100)} % dropped`;
  if (arm.kind === 'webhooks')
    return [
      atMost(`webhooks, ${size}: freshness p99 ≤ 2 s`, labels.p99(label), 2),
      atMost(`webhooks, ${size}: ≤ 2.5 requests per published change`, labels.perChange(label), 2.5),
    ];
  if (arm.kind === 'drop')
    return [
      atMost(`webhooks, ${pct}: 0 lost`, labels.lost(label), 0),
      atMost(
        `webhooks, ${pct}: dropped ones published within one reconciliation interval (${arm.intervalMs / 1000} s)`,
        labels.droppedSlowest(label),
        1,
      ),
    ];
  return [];
}

export const webhooksBench: BenchModule = {
  name: 'webhooks',
  // Its own process: whatever a failed arm leaves open (a client's handle) ends with it.
  isolated: true,
  async run(): Promise<BenchResult> {
    const sizes = envList('BENCH_WH_SIZES', [1_000, 10_000]);
    const creates = envInt('BENCH_WH_CREATES', 1);
    const rps = envInt('BENCH_WH_RPS', 20);
    const arms = armsOf({
      sizes,
      dropSizes: envList('BENCH_WH_DROP_SIZES', sizes.slice(0, 1)),
      rps,
      creates,
      reconcileMs: envInt('BENCH_WH_RECONCILE_MS', 15 * 60_000),
      dropReconcileMs: envInt('BENCH_WH_DROP_RECONCILE_MS', 60_000),
      dropRate: envInt('BENCH_WH_DROP_PCT', 20) / 100,
      windowS: envInt('BENCH_WH_WINDOW_S', 40),
      largeWindowS: envInt('BENCH_WH_LARGE_WINDOW_S', 30),
      tailMaxS: envInt('BENCH_WH_TAIL_MAX_S', 60),
      firstPort: envInt('BENCH_WH_PORT', 25_100),
    });
    const secret = `whsec_${randomBytes(24).toString('base64')}`;
    process.env[SECRET_ENV] = secret;
    applyKafkajsIdleTimerFix();
    const stack = await provideStack(['environment', 'jvm']);
    const samples = new Samples();
    const notes: string[] = [];
    const abort = new AbortController();
    try {
      say(`arms ${arms.map(armLabel).join('; ')}, all at once`);
      const ctx: ArmContext = { stack, secret, signal: abort.signal, samples, notes };
      const outcomes = await Promise.allSettled(
        arms.map((arm) =>
          runArm(arm, ctx).catch((error: unknown) => {
            // The first failure stops every other arm; each still reports the windows it completed.
            abort.abort();
            throw error;
          }),
        ),
      );
      for (const [i, outcome] of outcomes.entries())
        if (outcome.status === 'rejected') {
          const arm = arms[i];
          const reason: unknown = outcome.reason;
          const message = reason instanceof Error ? reason.message : String(reason);
          notes.push(`${arm === undefined ? 'an arm' : armLabel(arm)}: FAILED: ${message}`);
          say(`${arm === undefined ? 'an arm' : armLabel(arm)} failed: ${message}`);
        }
    } finally {
      await stack.stop();
    }
    notes.push(
      `Each arm: its own sandbox (child process) creating ${creates} call(s)/s on random locations with a hidden limit of ${rps} requests/s per token (429 + Retry-After, no RateLimit headers), its own connector in this process (api.requestsPerSecond and api.rateLimit.ceilingPerSecond ${rps}, enrichment on, exactly-once, lanes off: the locations start empty); every arm runs at the same time.`,
      "Requests per published change: the listings and single calls answered in a window, less the reconciliation polls due in it (counted from each location's poll phase: one idle listing each), over the changes of the window received.",
    );
    return {
      name: `webhooks: against polling, ${sizes.join(' and ')} locations, ${creates} change/s, ${rps} req/s hidden limit`,
      figures: samples.figures(),
      goals: arms.flatMap(goalsOf),
      notes,
    };
  },
};
