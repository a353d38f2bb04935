/**
 * Scale in locations and in data (issue 15 point 3). The sandbox runs in a child process, so CPU time and
 * RSS are the connector process alone.
 * - Locations: the same number of records spread over 1, 100 and 1,000 locations (exactly-once, enriched):
 *   records/s, CPU seconds per 10,000 records, peak RSS.
 * - Data: backfills of growing size (10 locations, exactly-once, not enriched so that the largest fits in
 *   minutes): peak RSS should stay flat (bounded by pages in flight, not by data size), CPU s per 10,000
 *   records constant. Sizes run in ascending order in one process, so a leak would show as a growing peak.
 *
 * Knobs (env): BENCH_SCALE_TOTAL (records in the locations runs, 20000), BENCH_SCALE_LOCATIONS ("1,100,1000"),
 * BENCH_SCALE_SIZES (records, "10000,100000,1000000": the million-call backfill is part of the default run,
 * about 2 min per repetition on a quiet 2-core machine).
 */
import { provideStack, type DevStack } from '../tools/devstack/stack-provider.js';
import { backfill, type Mode } from './connector.js';
import { startSandboxChild } from './sandbox-child.js';
import { atMost, envInt, ratios, REPETITIONS, Samples } from './stats.js';
import type { BenchModule, BenchResult } from './types.js';

function envList(name: string, fallback: number[]): number[] {
  const v = process.env[name];
  return v === undefined || v === '' ? fallback : v.split(',').map((x) => Number.parseInt(x, 10));
}

/** Peak RSS of the largest backfill over that of the smallest, per repetition: 1 is flat in the data size. */
const RSS_GROWTH = 'peak RSS: largest data size / smallest';
const ENRICHED: Mode = { label: 'exactly-once, enriched', exactlyOnce: true, enrich: true };
const NOT_ENRICHED: Mode = { label: 'exactly-once, not enriched', exactlyOnce: true, enrich: false };

async function measure(
  stack: DevStack,
  s: Samples,
  label: string,
  mode: Mode,
  locations: number,
  callsPerLocation: number,
): Promise<void> {
  const sandbox = await startSandboxChild(locations, callsPerLocation);
  try {
    for (let rep = 0; rep < REPETITIONS; rep++) {
      const figures = await backfill(mode, sandbox.ready, sandbox.caFile, stack, {
        poll: { maxLocationsInFlight: Math.min(locations, 64) },
      });
      const value = (suffix: string) => figures.find((f) => f.label.endsWith(suffix))?.value ?? 0;
      const records = value('records published');
      s.add(`${label}: records/s`, 'records/s', value('backfill throughput'));
      s.add(`${label}: CPU per 10,000 records`, 'CPU s', (value('CPU time') * 10_000) / Math.max(1, records));
      s.add(`${label}: peak RSS`, 'MiB', value('peak RSS'));
      s.add(`${label}: records published`, 'records', records);
    }
  } finally {
    await sandbox.close();
  }
}

export const scaleBench: BenchModule = {
  name: 'scale',
  isolated: true,
  async run(): Promise<BenchResult> {
    const total = envInt('BENCH_SCALE_TOTAL', 20_000);
    const locationCounts = envList('BENCH_SCALE_LOCATIONS', [1, 100, 1_000]);
    const sizes = envList('BENCH_SCALE_SIZES', [10_000, 100_000, 1_000_000]);
    const stack = await provideStack(['environment', 'jvm']);
    const s = new Samples();
    try {
      for (const locations of locationCounts)
        await measure(
          stack,
          s,
          `${locations.toLocaleString('en-US')} location(s) × ${Math.ceil(total / locations).toLocaleString('en-US')} calls, enriched`,
          ENRICHED,
          locations,
          Math.ceil(total / locations),
        );
      for (const size of sizes)
        await measure(
          stack,
          s,
          `${size.toLocaleString('en-US')}-call backfill, 10 locations, not enriched`,
          NOT_ENRICHED,
          10,
          Math.ceil(size / 10),
        );
    } finally {
      await stack.stop();
    }
    const rssOf = (size: number | undefined) =>
      s.values(`${(size ?? 0).toLocaleString('en-US')}-call backfill, 10 locations, not enriched: peak RSS`);
    for (const r of ratios(rssOf(sizes.at(-1)), rssOf(sizes[0]))) s.add(RSS_GROWTH, 'ratio', r);
    return {
      name: 'scale in locations and data',
      figures: s.figures(),
      goals: [
        atMost('peak RSS flat in the data size (≤ 1.25× from the smallest to the largest)', RSS_GROWTH, 1.25),
      ],
      notes: [
        `Locations: ${total.toLocaleString('en-US')} generated calls spread over ${locationCounts.join(', ')} location(s) (listable ones published), up to 64 locations in flight, api.maxConcurrency 64, enrichConcurrency 32.`,
        `Data: backfills of ${sizes.map((n) => n.toLocaleString('en-US')).join(', ')} generated calls over 10 locations, enrichment off, in ascending order in one process (RSS sampled every 100 ms; V8 keeps heap it grew, so a flat peak across sizes is the claim, not the absolute figure).`,
        'The sandbox runs in a child process: CPU and RSS are the connector process alone. Kafka and the registry are the shared stack on the same machine.',
      ],
    };
  },
};
