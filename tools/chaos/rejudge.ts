/**
 * `node dist/tools/chaos/rejudge.js RUN_FOLDER` (or the path of its freshness.json): judges a chaos run's
 * freshness again, offline, from the inputs the run kept (freshness.json, written by run.ts), by today's rule
 * (freshness.ts). Prints the per-fault table the report prints (report.ts) and the late lines the run prints.
 * Exit 0 when no change was late, 1 when some were, 2 on a bad command line or an unreadable file.
 */
import { readFileSync, realpathSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { freshnessViolation, judgeRecord, type FreshnessRecord } from './freshness.js';
import { freshnessTable } from './report.js';

const epochMs = z.number();
const durationMs = z.number().nonnegative();

const recordSchema = z.object({
  phaseStartMs: epochMs,
  windows: z.array(
    z.object({
      kind: z.string(),
      startMs: epochMs,
      endMs: epochMs,
      untilMs: epochMs,
      recoveryMs: durationMs.nullable(),
      handoverMs: durationMs.nullable().optional(),
      allowanceMs: durationMs,
      effectiveIntervalMs: durationMs,
      gaugeMaxMs: durationMs.nullable(),
    }),
  ),
  changes: z.array(
    z.object({
      uid: z.string(),
      locationUid: z.string(),
      updatedAtMs: epochMs,
      madeAtMs: epochMs,
      inKafkaAtMs: epochMs.nullable(),
    }),
  ),
});

/** A run's freshness.json, read from `path` (a run folder or the file itself); throws naming what is wrong. */
export function readFreshnessRecord(path: string): FreshnessRecord {
  const file = statSync(path).isDirectory() ? join(path, 'freshness.json') : path;
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new Error(`${file}: not JSON (${(error as Error).message})`, { cause: error });
  }
  const parsed = recordSchema.safeParse(json);
  if (!parsed.success) throw new Error(`${file}: not a freshness record: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/** The table and the late lines of `record` judged again, and how many changes were late. */
export function rejudge(record: FreshnessRecord): { lines: string[]; late: number } {
  const figures = judgeRecord(record);
  const late = figures
    .map(freshnessViolation)
    .filter((line): line is string => line !== null)
    .map((line) => `- ${line}`);
  return {
    lines: [...freshnessTable(figures), '', ...(late.length === 0 ? ['No late changes.'] : late)],
    late: figures.reduce((sum, f) => sum + f.late, 0),
  };
}

function main(args: readonly string[]): number {
  const [path, ...rest] = args;
  if (path === undefined || rest.length > 0) {
    process.stderr.write('usage: node dist/tools/chaos/rejudge.js RUN_FOLDER | FRESHNESS_JSON\n');
    return 2;
  }
  let record: FreshnessRecord;
  try {
    record = readFreshnessRecord(path);
  } catch (error) {
    process.stderr.write(`rejudge: ${(error as Error).message}\n`);
    return 2;
  }
  const { lines, late } = rejudge(record);
  process.stdout.write(`${lines.join('\n')}\n`);
  return late === 0 ? 0 : 1;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href)
  process.exitCode = main(process.argv.slice(2));
