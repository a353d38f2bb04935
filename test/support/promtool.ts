/**
 * Runs `promtool` (Debian package `prometheus`). Tests that need it fail, never skip, when it is missing:
 * a skipped check would let a broken exposition or alert rule through CI unnoticed.
 */
import { spawnSync } from 'node:child_process';

export interface PromtoolResult {
  status: number | null;
  output: string;
}

export const PROMTOOL_MISSING =
  'promtool is not installed: run `apt-get update && apt-get install -y prometheus` (Debian package `prometheus`); .ci/run installs it';

export function promtool(args: readonly string[], stdin?: string): PromtoolResult {
  const result = spawnSync('promtool', args, { input: stdin, encoding: 'utf8', timeout: 60_000 });
  if (result.error !== undefined) {
    const code = (result.error as NodeJS.ErrnoException).code;
    throw new Error(code === 'ENOENT' ? PROMTOOL_MISSING : `promtool failed to run: ${result.error.message}`);
  }
  return { status: result.status, output: `${result.stdout}${result.stderr}`.trim() };
}
