/**
 * Memory of a backfill under the heap bound the image ships (Dockerfile `NODE_OPTIONS=--max-old-space-size=…`):
 * 200 locations backfilled at once, exactly-once and enriched, in a process of its own started with that flag,
 * so the peak RSS is what a 512 MiB container would see. Memory is bounded by the pages in flight
 * (`poll.maxLocationsInFlight` × two pages × `api.pageSize` calls), never by the data size: the goal holds at
 * any number of calls.
 *
 * Knobs (env): BENCH_MEMORY_LOCATIONS (200), BENCH_MEMORY_CALLS (calls per location, 250),
 * BENCH_MEMORY_IN_FLIGHT (locations in flight, 64: sixteen times the default, so the bound is exercised).
 */
import { provideStack } from '../tools/devstack/stack-provider.js';
import { backfill, type Mode } from './connector.js';
import { startSandboxChild } from './sandbox-child.js';
import { atMost, envInt, REPETITIONS, Samples } from './stats.js';
import type { BenchModule, BenchResult } from './types.js';

/** The image's heap bound (MiB of V8 old space); test/unit/bench/memory.test.ts holds the Dockerfile to it. */
export const IMAGE_HEAP_MIB = 256;
/** The container memory the image's default is meant to fit. */
export const CONTAINER_MIB = 512;

const MODE: Mode = { label: 'exactly-once, enriched', exactlyOnce: true, enrich: true };

export const memoryBench: BenchModule = {
  name: 'memory',
  isolated: true,
  execArgv: [`--max-old-space-size=${IMAGE_HEAP_MIB}`],
  async run(): Promise<BenchResult> {
    const locations = envInt('BENCH_MEMORY_LOCATIONS', 200);
    const calls = envInt('BENCH_MEMORY_CALLS', 250);
    const inFlight = envInt('BENCH_MEMORY_IN_FLIGHT', 64);
    const label = `${locations.toLocaleString('en-US')}-location backfill`;
    const stack = await provideStack(['environment', 'jvm']);
    const sandbox = await startSandboxChild(locations, calls);
    const s = new Samples();
    try {
      for (let rep = 0; rep < REPETITIONS; rep++) {
        const figures = await backfill(MODE, sandbox.ready, sandbox.caFile, stack, {
          poll: { maxLocationsInFlight: inFlight },
        });
        const value = (suffix: string) => figures.find((f) => f.label.endsWith(suffix))?.value ?? 0;
        s.add(`${label}: peak RSS`, 'MiB', value('peak RSS'));
        s.add(`${label}: peak heap used`, 'MiB', value('peak heap used'));
        s.add(`${label}: records published`, 'records', value('records published'));
        s.add(`${label}: records/s`, 'records/s', value('backfill throughput'));
      }
    } finally {
      await sandbox.close();
      await stack.stop();
    }
    return {
      name: 'memory under the image heap bound',
      figures: s.figures(),
      goals: [
        atMost(
          `peak RSS of a ${label}, heap bound ${IMAGE_HEAP_MIB} MiB (≤ ${CONTAINER_MIB} MiB: fits the container)`,
          `${label}: peak RSS`,
          CONTAINER_MIB,
        ),
      ],
      notes: [
        `${locations} locations × ${calls} generated calls, exactly-once, enriched, ${inFlight} locations in flight, node --max-old-space-size=${IMAGE_HEAP_MIB} (the image's NODE_OPTIONS), RSS sampled every 100 ms; repetitions run one after the other in one process, so the peak is over all of them.`,
        'The sandbox runs in a child process: RSS is the connector process alone.',
      ],
    };
  },
};
