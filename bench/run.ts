/**
 * `npm run bench [-- [--quick] name...]`: runs the benchmark modules (all, or those named) one after the
 * other and writes bench/reports/<date>.md and <date>.json (relative to the working directory).
 * `--quick` runs each module on smaller data and shorter windows (QUICK below: its env knobs, unless set),
 * still 3 repetitions: a check that the bench works, not figures to publish.
 *
 * Add a benchmark by adding its module to `modules` below.
 */
// First: it must be evaluated before any module loads kafkajs (see the module).
import '../src/kafka/client/kafkajs-read-committed-fix.js';
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { avroBench } from './avro.js';
import { backfillSignalBench } from './backfill-signal.js';
import { bulkImportBench } from './bulk-import.js';
import { connectorBench } from './connector.js';
import { distributedBench } from './distributed.js';
import { freshnessBench } from './freshness.js';
import { idleBench } from './idle.js';
import { lanesBench } from './lanes.js';
import { limitsBench } from './limits.js';
import { profileBench } from './profile.js';
import { rateLimitedBench } from './ratelimited.js';
import { replayShareBench } from './replay-share.js';
import { restartBench } from './restart.js';
import { stretchBench } from './stretch.js';
import { sandboxBench } from './sandbox.js';
import { memoryBench } from './memory.js';
import { scaleBench } from './scale.js';
import { webhookFloodBench } from './webhook-flood.js';
import { webhooksBench } from './webhooks.js';
import { webhookShapesBench } from './webhook-shapes.js';
import { BENCH_USAGE, benchArguments } from './arguments.js';
import { judge, REPETITIONS, type GoalOutcome } from './stats.js';
import type { BenchModule, BenchResult } from './types.js';

/** A module's result and how long it ran (wall clock, its process start included when isolated). */
interface Timed {
  result: BenchResult;
  seconds: number;
}

const modules: BenchModule[] = [
  sandboxBench,
  avroBench,
  limitsBench,
  profileBench,
  rateLimitedBench,
  scaleBench,
  memoryBench,
  freshnessBench,
  restartBench,
  stretchBench,
  lanesBench,
  backfillSignalBench,
  idleBench,
  distributedBench,
  webhooksBench,
  webhookShapesBench,
  webhookFloodBench,
  replayShareBench,
  bulkImportBench,
];

/** The knobs of a quick run (each module reads its knobs when it runs). */
const QUICK: Record<string, string> = {
  BENCH_SANDBOX_SECONDS: '2',
  BENCH_SANDBOX_LOCATIONS: '100',
  BENCH_LIMITS_CALLS: '300',
  BENCH_PROFILE_CALLS: '300',
  BENCH_NAIVE_RECORDS: '200',
  BENCH_RL_LIMITS: '20',
  BENCH_RL_HEADERS_LIMITS: 'none',
  BENCH_RL_SECONDS: '40',
  BENCH_IDLE_LOCATIONS: '1000',
  BENCH_IDLE_INTERVAL_MS: '10000',
  BENCH_SCALE_TOTAL: '3000',
  BENCH_SCALE_LOCATIONS: '1,100,1000',
  BENCH_SCALE_SIZES: '5000,20000',
  BENCH_MEMORY_CALLS: '20',
  BENCH_FRESH_LOCATIONS: '100',
  BENCH_FRESH_INTERVAL_MS: '5000',
  BENCH_FRESH_WINDOW_S: '10',
  BENCH_FRESH_RPS: '40',
  BENCH_RESTART_WINDOW_S: '12',
  BENCH_BF_CALLS: '300',
  BENCH_BF_INTERVAL_MS: '3000',
  BENCH_LANES_LOCATIONS: '10',
  BENCH_LANES_CALLS: '150',
  BENCH_LANES_RPS: '100',
  BENCH_LANES_INTERVAL_MS: '3000',
  BENCH_LANES_WINDOW_S: '6',
  BENCH_DIST_CALLS: '300',
  BENCH_WH_SIZES: '100,1000',
  BENCH_SHAPES_CHANGES: '50',
  BENCH_WH_WINDOW_S: '10',
  BENCH_WH_DROP_SIZES: '100',
  BENCH_WH_DROP_RECONCILE_MS: '15000',
  BENCH_WH_TAIL_MAX_S: '20',
  BENCH_BULK_SIZES: '300,3000',
  BENCH_BULK_RPS: '200',
  BENCH_BULK_REPS: '1',
  BENCH_SHARE_DELIVERIES: '50',
};
/** Run only when named: the backfill alone in three modes, for profiling (`node --cpu-prof dist/bench/run.js connector`). */
const onRequest: BenchModule[] = [connectorBench];

/** A figure for the report; NaN (null once it crossed an isolated module's IPC, which is JSON) is `n/a`. */
function num(value: number | null | undefined): string {
  if (value === undefined) return '';
  if (value === null || Number.isNaN(value)) return 'n/a';
  return value.toLocaleString('en-US', { maximumFractionDigits: 2 });
}

function target(outcome: GoalOutcome): string {
  const { atLeast, atMost } = outcome.goal;
  return [atLeast === undefined ? '' : `≥ ${num(atLeast)}`, atMost === undefined ? '' : `≤ ${num(atMost)}`]
    .filter((t) => t !== '')
    .join(', ');
}

/** The goals table at the top of the report: every module's goals, judged by the median of their figure. */
function goalLines(outcomes: readonly GoalOutcome[]): string[] {
  if (outcomes.length === 0) return [];
  const lines = [
    '## Goals (issue 15)',
    '',
    '| Goal | Figure (module) | Target | Median | Min–max | Met |',
    '|---|---|---:|---:|---:|---|',
  ];
  for (const o of outcomes) {
    const f = o.figure;
    lines.push(
      `| ${o.goal.goal} | ${o.goal.figure} (${o.module}) | ${target(o)} | ${f === undefined ? 'figure missing' : num(f.value)} | ${f?.min === undefined ? '' : `${num(f.min)}–${num(f.max)}`} | ${o.met ? 'met' : '**not met**'} |`,
    );
  }
  lines.push(
    '',
    'Met or not by the median of the repetitions; the min–max shows whether every repetition met it.',
    '',
  );
  return lines;
}

function markdown(
  date: string,
  timed: readonly Timed[],
  outcomes: readonly GoalOutcome[],
  loadAtStart: number[],
  quick: boolean,
): string {
  const total = timed.reduce((sum, t) => sum + t.seconds, 0);
  const lines = [
    `# Benchmarks ${date}${quick ? ' (quick run: small data, short windows; not figures to publish)' : ''}`,
    '',
    `Median of ${REPETITIONS} repetitions unless a row has no min/max. Node ${process.version}, ${cpus().length} CPU(s) (${cpus()[0]?.model ?? 'unknown'}), ${Math.round(totalmem() / 2 ** 30)} GiB; load average at the start ${loadAtStart.map((l) => l.toFixed(1)).join(' / ')}, at the end ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' / ')} (1/5/15 min): figures from a busy machine are lower bounds.`,
    '',
    ...goalLines(outcomes),
    `## Modules run (${(total / 60).toFixed(1)} min in all)`,
    '',
    '| Module | Duration |',
    '|---|---:|',
    ...timed.map((t) => `| ${t.result.name} | ${t.seconds.toFixed(0)} s |`),
    '',
  ];
  for (const { result: r } of timed) {
    lines.push(`## ${r.name}`, '', '| Measure | Median | Min | Max | Unit |', '|---|---:|---:|---:|---|');
    for (const f of r.figures)
      lines.push(`| ${f.label} | ${num(f.value)} | ${num(f.min)} | ${num(f.max)} | ${f.unit} |`);
    lines.push('');
    for (const n of r.notes) lines.push(`- ${n}`);
    lines.push('');
  }
  return lines.join('\n');
}

/**
 * Runs one module in a child process of its own (same flags, same env), so that the process memory it
 * reports is its own and not what earlier modules left (RSS never shrinks much once grown).
 */
async function runIsolated(m: BenchModule, quick: boolean): Promise<BenchResult> {
  const { name } = m;
  const child = fork(fileURLToPath(import.meta.url), ['--child', name, ...(quick ? ['--quick'] : [])], {
    execArgv: [...process.execArgv, ...(m.execArgv ?? [])],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const result = new Promise<BenchResult>((resolve) => child.once('message', resolve));
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`benchmark ${name} failed in its process (exit ${code})`);
  return result;
}

/** The child side of runIsolated: runs the module, sends its result, writes no report. */
async function child(name: string): Promise<void> {
  const m = [...modules, ...onRequest].find((x) => x.name === name);
  if (m === undefined) throw new Error(`unknown benchmark ${name}`);
  const result = await m.run();
  await new Promise<void>((resolve, reject) =>
    process.send?.(result, (error: Error | null) => (error === null ? resolve() : reject(error))),
  );
}

async function main(argv: string[]): Promise<void> {
  const { quick, help, child: childName, wanted } = benchArguments(argv);
  const known = [...modules, ...onRequest];
  if (help) {
    process.stdout.write(
      `${BENCH_USAGE}\nmodules (all by default): ${modules.map((m) => m.name).join(', ')}\n` +
        `on request only: ${onRequest.map((m) => m.name).join(', ')}\n` +
        "each module's knobs (environment variables) are listed at the top of its file in bench/\n",
    );
    return;
  }
  if (quick) for (const [name, value] of Object.entries(QUICK)) process.env[name] ??= value;
  if (childName !== undefined) {
    await child(childName);
    process.exit(0); // a client's lingering handle must not keep the parent waiting
  }
  const unknown = wanted.filter((w) => !known.some((m) => m.name === w));
  if (unknown.length > 0)
    throw new Error(
      `unknown benchmark(s): ${unknown.join(', ')}; known: ${known.map((m) => m.name).join(', ')}`,
    );
  const selected = wanted.length === 0 ? modules : known.filter((m) => wanted.includes(m.name));
  const timed: Timed[] = [];
  const loadAtStart = loadavg();
  for (const m of selected) {
    process.stdout.write(`bench: running ${m.name}\n`);
    const started = performance.now();
    const result = m.isolated === true ? await runIsolated(m, quick) : await m.run();
    const seconds = (performance.now() - started) / 1000;
    for (const f of result.figures) process.stdout.write(`  ${f.label}: ${num(f.value)} ${f.unit}\n`);
    process.stdout.write(`bench: ${m.name} took ${seconds.toFixed(0)} s\n`);
    timed.push({ result, seconds });
  }
  const outcomes = timed.flatMap(({ result }) =>
    (result.goals ?? []).map((goal) => judge(goal, result.name, result.figures)),
  );
  for (const o of outcomes)
    process.stdout.write(
      `bench: goal ${o.met ? 'met' : 'NOT met'}: ${o.goal.goal} (${o.goal.figure}: ${o.figure === undefined ? 'missing' : num(o.figure.value)})\n`,
    );
  const date = new Date().toISOString().slice(0, 19).replace(/:/g, '-');
  const dir = join(process.cwd(), 'bench', 'reports');
  await mkdir(dir, { recursive: true });
  const results = timed.map(({ result, seconds }) => ({ ...result, seconds }));
  const goals = outcomes.map((o) => ({
    ...o.goal,
    module: o.module,
    value: o.figure?.value ?? null,
    min: o.figure?.min ?? null,
    max: o.figure?.max ?? null,
    met: o.met,
  }));
  await writeFile(
    join(dir, `${date}.json`),
    `${JSON.stringify({ date, quick, node: process.version, repetitions: REPETITIONS, loadAtStart, loadAtEnd: loadavg(), goals, results }, null, 2)}\n`,
  );
  await writeFile(join(dir, `${date}.md`), markdown(date, timed, outcomes, loadAtStart, quick));
  process.stdout.write(`bench: wrote bench/reports/${date}.md and .json\n`);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
