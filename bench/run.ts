/**
 * `npm run bench [-- [--quick] name...]`: runs the benchmark modules (all, or those named) one after the
 * other and writes bench/reports/<date>.md and <date>.json (relative to the working directory).
 * `--quick` runs each module on smaller data and shorter windows (QUICK below: its env knobs, unless set),
 * still 3 repetitions: a check that the bench works, not figures to publish.
 *
 * Add a benchmark by adding its module to `modules` below.
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { avroBench } from './avro.js';
import { connectorBench } from './connector.js';
import { freshnessBench } from './freshness.js';
import { idleBench } from './idle.js';
import { limitsBench } from './limits.js';
import { profileBench } from './profile.js';
import { rateLimitedBench } from './ratelimited.js';
import { sandboxBench } from './sandbox.js';
import { scaleBench } from './scale.js';
import { REPETITIONS } from './stats.js';
import type { BenchModule, BenchResult } from './types.js';

const modules: BenchModule[] = [
  sandboxBench,
  avroBench,
  limitsBench,
  profileBench,
  rateLimitedBench,
  scaleBench,
  freshnessBench,
  idleBench,
];

/** The knobs of a quick run (each module reads its knobs when it runs). */
const QUICK: Record<string, string> = {
  BENCH_SANDBOX_SECONDS: '2',
  BENCH_SANDBOX_LOCATIONS: '100',
  BENCH_LIMITS_CALLS: '300',
  BENCH_PROFILE_CALLS: '300',
  BENCH_NAIVE_RECORDS: '200',
  BENCH_RL_LOCATIONS: '2',
  BENCH_RL_CALLS: '100',
  BENCH_IDLE_LOCATIONS: '1000',
  BENCH_IDLE_INTERVAL_MS: '10000',
  BENCH_SCALE_TOTAL: '3000',
  BENCH_SCALE_LOCATIONS: '1,100,1000',
  BENCH_SCALE_SIZES: '5000,20000',
  BENCH_FRESH_LOCATIONS: '100',
  BENCH_FRESH_INTERVAL_MS: '5000',
  BENCH_FRESH_WINDOW_S: '10',
  BENCH_FRESH_RPS: '40',
};
/** Run only when named: the backfill alone in three modes, for profiling (`node --cpu-prof dist/bench/run.js connector`). */
const onRequest: BenchModule[] = [connectorBench];

function num(value: number | undefined): string {
  return value === undefined ? '' : value.toLocaleString('en-US', { maximumFractionDigits: 2 });
}

function markdown(date: string, results: BenchResult[], loadAtStart: number[], quick: boolean): string {
  const lines = [
    `# Benchmarks ${date}${quick ? ' (quick run: small data, short windows; not figures to publish)' : ''}`,
    '',
    `Median of ${REPETITIONS} repetitions unless a row has no min/max. Node ${process.version}, ${cpus().length} CPU(s) (${cpus()[0]?.model ?? 'unknown'}), ${Math.round(totalmem() / 2 ** 30)} GiB; load average at the start ${loadAtStart.map((l) => l.toFixed(1)).join(' / ')}, at the end ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' / ')} (1/5/15 min): figures from a busy machine are lower bounds.`,
    '',
  ];
  for (const r of results) {
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
async function runIsolated(name: string, quick: boolean): Promise<BenchResult> {
  const child = fork(fileURLToPath(import.meta.url), ['--child', name, ...(quick ? ['--quick'] : [])], {
    execArgv: process.execArgv,
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
  const quick = argv.includes('--quick');
  if (quick) for (const [name, value] of Object.entries(QUICK)) process.env[name] ??= value;
  const childOf = argv.indexOf('--child');
  if (childOf >= 0) {
    await child(argv[childOf + 1] ?? '');
    process.exit(0); // a client's lingering handle must not keep the parent waiting
  }
  const wanted = argv.filter((a) => !a.startsWith('-'));
  const known = [...modules, ...onRequest];
  const unknown = wanted.filter((w) => !known.some((m) => m.name === w));
  if (unknown.length > 0)
    throw new Error(
      `unknown benchmark(s): ${unknown.join(', ')}; known: ${known.map((m) => m.name).join(', ')}`,
    );
  const selected = wanted.length === 0 ? modules : known.filter((m) => wanted.includes(m.name));
  const results: BenchResult[] = [];
  const loadAtStart = loadavg();
  for (const m of selected) {
    process.stdout.write(`bench: running ${m.name}\n`);
    const result = m.isolated === true ? await runIsolated(m.name, quick) : await m.run();
    for (const f of result.figures) process.stdout.write(`  ${f.label}: ${f.value.toFixed(2)} ${f.unit}\n`);
    results.push(result);
  }
  const date = new Date().toISOString().slice(0, 19).replace(/:/g, '-');
  const dir = join(process.cwd(), 'bench', 'reports');
  await mkdir(dir, { recursive: true });
  await writeFile(
    join(dir, `${date}.json`),
    `${JSON.stringify({ date, quick, node: process.version, repetitions: REPETITIONS, loadAtStart, loadAtEnd: loadavg(), results }, null, 2)}\n`,
  );
  await writeFile(join(dir, `${date}.md`), markdown(date, results, loadAtStart, quick));
  process.stdout.write(`bench: wrote bench/reports/${date}.md and .json\n`);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
