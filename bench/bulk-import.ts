/**
 * Bulk import (issue 39): tens of thousands of calls at one instant in one location, under a hidden rate
 * limit, with 0.01 % of the calls' single-call requests failing past the client's retries. Goals: the history
 * lane merges with 0 lost and 0 doubled, and the connector's peak RSS with the large group is within 1.25×
 * that with a group ten times smaller (a same-instant group is read in pieces, docs/sync.md "Lanes").
 *
 * Each run is a process of its own (bench/bulk-import-run.ts), so each peak RSS is that run's alone.
 *
 * Knobs (env): BENCH_BULK_SIZES (the small and the large group, `3000,30000`), BENCH_BULK_RPS (the hidden
 * limit, 20: the issue's case; 30,000 single calls at 20/s take 25 min per run), BENCH_BULK_FAIL_RATE
 * (0.0001), BENCH_BULK_OTHERS (calls besides the group, 200), BENCH_BULK_BOUNDARY_CAP (poll.boundaryCap, 40000:
 * a boundary that holds the group, so it is committed in pieces; the default 5,000 reads the rest of a larger
 * group as one page), BENCH_BULK_PIECE (lanes.groupPieceSize, 1000), BENCH_BULK_REPS (runs per size,
 * REPETITIONS), BENCH_BULK_TIMEOUT_S (per run, 3600), BENCH_BULK_SANDBOX_PORT (the sandbox's port on 127.0.0.1,
 * 0: any free one).
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import type { BulkRunFigures, BulkRunSettings } from './bulk-import-run.js';
import { atLeast, atMost, envInt, REPETITIONS, Samples } from './stats.js';
import type { BenchModule, BenchResult } from './types.js';

async function runOnce(settings: BulkRunSettings): Promise<BulkRunFigures> {
  const child = fork(new URL('./bulk-import-run.js', import.meta.url), [JSON.stringify(settings)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const figures = new Promise<BulkRunFigures>((resolve) => child.once('message', resolve));
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`the bulk-import run of ${settings.size} calls failed (exit ${code})`);
  return figures;
}

const RATIO = 'peak RSS, large group / small group (goal <= 1.25)';

export const bulkImportBench: BenchModule = {
  name: 'bulk-import',
  async run(): Promise<BenchResult> {
    const sizes = (process.env.BENCH_BULK_SIZES ?? '3000,30000')
      .split(',')
      .map((s) => Number.parseInt(s, 10));
    const [small, large] = sizes;
    if (small === undefined || large === undefined || !(small > 0 && large > small))
      throw new Error('BENCH_BULK_SIZES is two group sizes, the small one first');
    const rps = envInt('BENCH_BULK_RPS', 20);
    const failRate = Number(process.env.BENCH_BULK_FAIL_RATE ?? '0.0001');
    const others = envInt('BENCH_BULK_OTHERS', 200);
    const boundaryCap = envInt('BENCH_BULK_BOUNDARY_CAP', 40_000);
    const pieceSize = envInt('BENCH_BULK_PIECE', 1_000);
    const reps = envInt('BENCH_BULK_REPS', REPETITIONS);
    const timeoutS = envInt('BENCH_BULK_TIMEOUT_S', 3_600);
    const sandboxPort = envInt('BENCH_BULK_SANDBOX_PORT', 0);
    const s = new Samples();
    const notes: string[] = [];
    for (let rep = 0; rep < reps; rep++) {
      const rss: number[] = [];
      for (const size of [small, large]) {
        const f = await runOnce({
          size,
          others,
          rps,
          failRate,
          boundaryCap,
          pieceSize,
          timeoutS,
          sandboxPort,
        });
        const label = `${size.toLocaleString('en-US')}-call group`;
        s.add(`${label}: merged (1 = yes)`, 'bool', f.merged ? 1 : 0);
        s.add(`${label}: call versions lost`, 'records', f.lost);
        s.add(`${label}: call versions doubled`, 'records', f.doubled);
        s.add(`${label}: duration to merge`, 's', f.seconds);
        s.add(`${label}: peak RSS`, 'MiB', f.peakRssMiB);
        s.add(`${label}: peak heap used`, 'MiB', f.peakHeapMiB);
        s.add(`${label}: single-call requests per listed call`, 'ratio', f.getRequests / f.truth);
        s.add(`${label}: listing requests`, 'requests', f.listRequests);
        s.add(`${label}: answered 429 (hidden limit) / 503 (failing calls)`, 'requests', f.refused429);
        notes.push(
          `run ${rep + 1}, ${label}: ${f.truth} call versions in the sandbox, ${f.getRequests} single-call and ${f.listRequests} listing requests, ${f.refused429} answered 429 and ${f.failed503} answered 503, merged ${f.merged ? 'yes' : 'NO'} in ${f.seconds.toFixed(0)} s, lost ${f.lost}, doubled ${f.doubled}.`,
        );
        rss.push(f.peakRssMiB);
      }
      s.add(RATIO, 'ratio', (rss[1] ?? Number.NaN) / (rss[0] ?? Number.NaN));
    }
    notes.unshift(
      `One location: a group of ${small} then of ${large} calls at one instant among ${others} other calls of history; a hidden limit of ${rps} req/s per token (the connector's default configuration: api.requestsPerSecond 20); ${failRate * 100} % of the calls fail their first 10 single-call requests (503), past the client's 8 attempts; poll.boundaryCap ${boundaryCap}, lanes.groupPieceSize ${pieceSize}; exactly-once; ${reps} run(s) per size, each in a process of its own.`,
    );
    return {
      name: `bulk import: ${large} calls at one instant, ${rps} req/s hidden limit`,
      figures: s.figures(),
      goals: [
        atLeast(
          `bulk import: ${large}-call group merged`,
          `${large.toLocaleString('en-US')}-call group: merged (1 = yes)`,
          1,
        ),
        atMost(
          `bulk import: ${large}-call group merged with 0 lost`,
          `${large.toLocaleString('en-US')}-call group: call versions lost`,
          0,
        ),
        atMost(
          `bulk import: ${large}-call group merged with 0 doubled`,
          `${large.toLocaleString('en-US')}-call group: call versions doubled`,
          0,
        ),
        atMost(`bulk import: peak RSS within 1.25× that of a ${small}-call group`, RATIO, 1.25),
      ],
      notes,
    };
  },
};
