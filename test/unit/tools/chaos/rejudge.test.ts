import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { FreshnessRecord } from '../../../../tools/chaos/freshness.js';
import { readFreshnessRecord, rejudge } from '../../../../tools/chaos/rejudge.js';
import { faultWindow, T0 } from '../../../support/fault-window.js';

/** A broker kill from +0 s, committing again 3 s after its end at +10 s; its window until +60 s; 2 s polls. */
const record: FreshnessRecord = {
  phaseStartMs: T0,
  windows: [faultWindow({ gaugeMaxMs: null })],
  changes: [
    { uid: 'on-time', locationUid: 'l1', updatedAtMs: 1, madeAtMs: T0 + 5_000, inKafkaAtMs: T0 + 14_000 },
    { uid: 'slow', locationUid: 'l2', updatedAtMs: 1, madeAtMs: T0 + 30_000, inKafkaAtMs: T0 + 39_000 },
  ],
};

const dirs: string[] = [];
function runFolder(content: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'calls-chaos-rejudge-'));
  dirs.push(dir);
  writeFileSync(join(dir, 'freshness.json'), content);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('judging a chaos run again from its folder', () => {
  it("prints the run's freshness table and the late lines from the folder's freshness.json", () => {
    const { lines, late } = rejudge(readFreshnessRecord(runFolder(JSON.stringify(record))));
    expect(late).toBe(1);
    expect(lines).toContain(
      '| broker-kill | +0 s | 2 | 9.0 s | 9.0 s | 9.0 s | 12.0 s | 2.0 s (—) | **1** |',
    );
    expect(lines.at(-1)).toBe(
      "- freshness: broker-kill at +0 s: 1 of 2 changes waited past the fault's recovery plus two effective intervals (2.0 s each; e.g. slow (location l2) made at +30.0 s: in Kafka after 9.0 s, allowed 4.0 s)",
    );
  });

  it('says so when no change was late, reading the file itself as well as its folder', () => {
    const dir = runFolder(JSON.stringify({ ...record, changes: record.changes.slice(0, 1) }));
    const { lines, late } = rejudge(readFreshnessRecord(join(dir, 'freshness.json')));
    expect(late).toBe(0);
    expect(lines.at(-1)).toBe('No late changes.');
  });

  it('refuses a file that is not a freshness record, naming the field', () => {
    expect(() => readFreshnessRecord(runFolder('{"phaseStartMs":'))).toThrow(/freshness\.json: not JSON/);
    const broken = { ...record, windows: [{ ...record.windows[0], recoveryMs: 'soon' }] };
    expect(() => readFreshnessRecord(runFolder(JSON.stringify(broken)))).toThrow(
      /not a freshness record:[\s\S]*windows\[0\]\.recoveryMs/,
    );
  });
});
