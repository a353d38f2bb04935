/**
 * Issue 15 point 7, in the report: where a backfill's CPU goes. Profiles one backfill per mode with
 * node:inspector's Profiler (the same sampling profiler as `node --cpu-prof`) and writes the three hottest
 * functions by self time and the self time by group (GC, TLS, undici, kafkajs, avsc, ours...), each as a
 * share of the busy time (every sample but idle), plus CPU seconds per 10,000 records.
 *
 * The sandbox runs in a child process, so the profile and the CPU time are the connector's alone. Only the
 * main thread is profiled: the connector has no worker of its own. Bounded: 10 locations × 1,000 calls per
 * mode (BENCH_PROFILE_CALLS), two modes, about a minute. BENCH_PROFILE_DIR=<dir> also writes each profile
 * there (<mode>.cpuprofile, for Chrome DevTools or speedscope).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import type { Profiler, Runtime } from 'node:inspector';
import { provideStack } from '../tools/devstack/stack-provider.js';
import { backfill, type Mode } from './connector.js';
import { startSandboxChild } from './sandbox-child.js';
import { envInt } from './stats.js';
import type { BenchFigure, BenchModule } from './types.js';

const knobs = {
  get locations() {
    return envInt('BENCH_PROFILE_LOCATIONS', 10);
  },
  get calls() {
    return envInt('BENCH_PROFILE_CALLS', 1_000);
  },
};

const MODES: Mode[] = [
  { label: 'exactly-once, enriched', exactlyOnce: true, enrich: true },
  { label: 'exactly-once, not enriched', exactlyOnce: true, enrich: false },
];

/** Self time of one function (or of one group of them), in microseconds. */
export interface SelfTime {
  name: string;
  micros: number;
}

/** What a profile says: busy time, the hottest functions, and the groups. */
export interface ProfileSummary {
  busyMicros: number;
  functions: SelfTime[];
  groups: SelfTime[];
}

/**
 * The group a function belongs to, by its script: V8's own entries, Node's TLS and HTTP client, the
 * libraries we chose, and our code (src/).
 */
export function costGroup(frame: Pick<Runtime.CallFrame, 'functionName' | 'url'>): string {
  const { functionName, url } = frame;
  if (functionName === '(garbage collector)') return 'GC';
  if (functionName === '(program)') return 'V8 and native (program)';
  if (url === '') return 'native (no script)';
  if (/node_modules\/undici\/|node:internal\/deps\/undici/.test(url)) return 'undici (HTTP client)';
  if (/node:(_tls|tls|internal\/tls|internal\/crypto)/.test(url)) return 'TLS';
  if (/node:(net|internal\/stream_base|internal\/streams|stream)/.test(url))
    return 'Node streams and sockets';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg !== null) return pkg[1] ?? 'other library';
  if (url.startsWith('node:')) return 'Node internals (timers, events, buffers)';
  if (/\/(dist\/)?src\//.test(url)) return 'ours (src/)';
  if (/\/(dist\/)?bench\//.test(url)) return 'the bench itself';
  return 'other';
}

/** Groups whose time is their callers' (Node's own modules and native code run for a library or for us). */
const ON_BEHALF = new Set([
  'native (no script)',
  'TLS',
  'Node streams and sockets',
  'Node internals (timers, events, buffers)',
]);

/**
 * The group a sample's time goes to: its function's, except that Node's modules and native code count for
 * the nearest library or code of ours that called them (a Buffer kafkajs allocates is kafkajs's cost, a
 * socket write undici makes is undici's). Without such a caller (socket reads, timers) they keep their own.
 */
function callerGroup(
  id: number,
  byId: ReadonlyMap<number, Profiler.ProfileNode>,
  parentOf: ReadonlyMap<number, number>,
): string {
  const own = costGroup(byId.get(id)?.callFrame ?? { functionName: '', url: '' });
  if (!ON_BEHALF.has(own)) return own;
  for (let at = parentOf.get(id); at !== undefined; at = parentOf.get(at)) {
    const frame = byId.get(at)?.callFrame;
    if (frame === undefined) break;
    const group = costGroup(frame);
    if (!ON_BEHALF.has(group) && group !== 'V8 and native (program)') return group;
  }
  return own;
}

function shortFile(url: string): string {
  const at = url.lastIndexOf('node_modules/');
  if (at >= 0) return url.slice(at + 'node_modules/'.length);
  const src = /\/((?:dist\/)?(?:src|bench|packages)\/.*)$/.exec(url);
  return src?.[1] ?? url.replace(/^file:\/\//, '');
}

/** Sums the self time of a V8 CPU profile by function and by group; idle samples are left out. */
export function summariseProfile(profile: Profiler.Profile): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parentOf = new Map<number, number>();
  for (const n of profile.nodes) for (const child of n.children ?? []) parentOf.set(child, n.id);
  const selfById = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  // timeDeltas[i] is the time before samples[i]; the time a sample stands for is the delta after it.
  for (let i = 0; i < samples.length; i++) {
    const id = samples[i] ?? 0;
    selfById.set(id, (selfById.get(id) ?? 0) + (deltas[i + 1] ?? 0));
  }
  const functions = new Map<string, number>();
  const groups = new Map<string, number>();
  let busy = 0;
  for (const [id, micros] of selfById) {
    const frame = byId.get(id)?.callFrame;
    if (frame === undefined || frame.functionName === '(idle)' || frame.functionName === '(root)') continue;
    busy += micros;
    const where = frame.url === '' ? '' : ` (${shortFile(frame.url)}:${frame.lineNumber + 1})`;
    const name = `${frame.functionName || '(anonymous)'}${where}`;
    functions.set(name, (functions.get(name) ?? 0) + micros);
    const group = callerGroup(id, byId, parentOf);
    groups.set(group, (groups.get(group) ?? 0) + micros);
  }
  const sorted = (m: Map<string, number>) =>
    [...m].map(([name, micros]) => ({ name, micros })).sort((a, b) => b.micros - a.micros);
  return { busyMicros: busy, functions: sorted(functions), groups: sorted(groups) };
}

function percent(part: number, whole: number): number {
  return whole > 0 ? (100 * part) / whole : 0;
}

async function profiled<T>(run: () => Promise<T>): Promise<{ result: T; profile: Profiler.Profile }> {
  const session = new Session();
  session.connect();
  try {
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 500 });
    await session.post('Profiler.start');
    const result = await run();
    const { profile } = await session.post('Profiler.stop');
    return { result, profile };
  } finally {
    session.disconnect();
  }
}

export const profileBench: BenchModule = {
  name: 'profile',
  isolated: true,
  async run() {
    const stack = await provideStack(['environment', 'jvm']);
    const sandbox = await startSandboxChild(knobs.locations, knobs.calls);
    const figures: BenchFigure[] = [];
    const notes: string[] = [];
    try {
      // A first backfill warms the JIT and the clients up, so the profile is of the steady cost.
      await backfill(MODES[0] as Mode, sandbox.ready, sandbox.caFile, stack);
      for (const mode of MODES) {
        const { result, profile } = await profiled(() =>
          backfill(mode, sandbox.ready, sandbox.caFile, stack),
        );
        const value = (suffix: string) => result.find((f) => f.label.endsWith(suffix))?.value ?? 0;
        const published = value('records published');
        const summary = summariseProfile(profile);
        const dir = process.env['BENCH_PROFILE_DIR'];
        if (dir !== undefined && dir !== '') {
          await mkdir(dir, { recursive: true });
          const file = `${mode.label.replace(/[^a-z]+/g, '-')}.cpuprofile`;
          await writeFile(join(dir, file), JSON.stringify(profile));
        }
        figures.push({
          label: `${mode.label}: CPU per 10,000 records (connector process alone, profiler on)`,
          value: published > 0 ? (value('CPU time') / published) * 10_000 : 0,
          unit: 's',
        });
        for (const [rank, f] of summary.functions.slice(0, 3).entries())
          figures.push({
            label: `${mode.label}: hottest #${rank + 1} by self time: ${f.name}`,
            value: percent(f.micros, summary.busyMicros),
            unit: '% of busy',
          });
        for (const g of summary.groups.slice(0, 6))
          figures.push({
            label: `${mode.label}: self time in ${g.name}`,
            value: percent(g.micros, summary.busyMicros),
            unit: '% of busy',
          });
        notes.push(
          `${mode.label}: ${published.toLocaleString('en-US')} records, busy ${(summary.busyMicros / 1e6).toFixed(2)} s of main-thread samples.`,
        );
      }
    } finally {
      await sandbox.close();
      await stack.stop();
    }
    return {
      name: 'profile of a backfill (issue 15 point 7)',
      figures,
      notes: [
        `One backfill of ${knobs.locations} locations × ${knobs.calls.toLocaleString('en-US')} calls per mode after one warm-up, profiled with node:inspector (sampling every 0.5 ms); the sandbox in a child process, so the CPU and the samples are the connector's alone.`,
        'Self time: the samples in which the function itself was running (not its callees); busy: every sample but idle. Groups by script: GC, V8 and native, each library (undici with the TLS and socket writes it makes, kafkajs with its Buffer allocations...), ours (src/); Node modules and native code count for the library or code of ours that called them, and keep their own group only without such a caller (socket reads, timers).',
        ...notes,
      ],
    };
  },
};
