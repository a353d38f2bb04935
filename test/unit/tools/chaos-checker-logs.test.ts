import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { logScanViolations, scanLogs } from '../../../tools/chaos/checker.js';

describe("the chaos checker's search of the logs for secrets", () => {
  const dir = mkdtempSync(join(tmpdir(), 'chaos-logs-'));
  const clean = join(dir, 'clean.log');
  const leaky = join(dir, 'leaky.log');
  writeFileSync(clean, '{"msg":"started"}\n{"msg":"page committed"}\n');
  writeFileSync(leaky, '{"msg":"token sbx_at_0123456789abcdefXYZ"}\n{"msg":"secret s3cr3t-value-1"}\n');

  it('finds a secret and a token, and passes clean logs', async () => {
    const scan = await scanLogs([clean, leaky], ['s3cr3t-value-1', 'short']);
    expect(scan.leaks.samples).toEqual([`${leaky}:1: an OAuth token`, `${leaky}:2: secret #1 of the run`]);
    expect(logScanViolations(scan, 2)).toEqual([
      `secrets in logs: 2 (e.g. ${leaky}:1: an OAuth token; ${leaky}:2: secret #1 of the run)`,
    ]);
    expect(logScanViolations(await scanLogs([clean], ['s3cr3t-value-1']), 1)).toEqual([]);
  });

  it('fails on a log it cannot read rather than skipping it', async () => {
    const missing = join(dir, 'missing.log');
    const scan = await scanLogs([clean, missing], []);
    expect(scan.unread.count).toBe(1);
    expect(logScanViolations(scan, 2)).toEqual([
      expect.stringMatching(
        /^log files that could not be searched for secrets: 1 \(e\.g\. .*missing\.log: ENOENT/,
      ),
    ]);
  });

  it('fails when no log line was searched at all: no file, or only empty ones', async () => {
    const empty = join(dir, 'empty.log');
    writeFileSync(empty, '\n');
    expect(logScanViolations(await scanLogs([empty], ['s3cr3t-value-1']), 1)).toEqual([
      'secrets in logs: no log line was searched (1 files given)',
    ]);
    expect(logScanViolations(await scanLogs([], ['s3cr3t-value-1']), 0)).toEqual([
      'secrets in logs: no log line was searched (0 files given)',
    ]);
  });
});
