#!/usr/bin/env node
// npm's `prepare` step (`npm ci` / `npm install` in a source checkout): builds dist/ with TypeScript.
//
// TypeScript is a dev dependency, so a bare-Node install (`npm ci --omit=dev`, or NODE_ENV=production) has no
// compiler. There, a checkout whose dist/ is already built (the documented path: `npm ci`, then
// `npm prune --omit=dev`, or `npm ci --omit=dev` again) is left as it is; one that was never built fails at
// once, saying how to build it, instead of a `tsc: not found` in the middle of npm's output.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** What the built product needs at run time (the CLI and the two workspace packages it imports). */
export const BUILT_FILES = [
  'dist/src/cli/main.js',
  'packages/sandbox/dist/index.js',
  'packages/self-signed/dist/index.js',
];

/** `build`, `skip` (built, no compiler: a bare-Node install) or a message saying what to do. */
export function decide({ typescriptInstalled, built }) {
  if (typescriptInstalled) return { action: 'build' };
  if (built) return { action: 'skip' };
  return {
    action: 'fail',
    message:
      'calls-connector: dist/ is not built and TypeScript (a dev dependency) is not installed, so it cannot be ' +
      'built here. For a production-only install from a source checkout run `npm ci` (installs everything and ' +
      'builds dist/), then `npm prune --omit=dev` (drops the dev dependencies, keeps dist/).',
  };
}

function typescriptInstalled() {
  try {
    createRequire(join(root, 'package.json')).resolve('typescript/package.json');
    return true;
  } catch {
    return false;
  }
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const verdict = decide({
    typescriptInstalled: typescriptInstalled(),
    built: BUILT_FILES.every((file) => existsSync(join(root, file))),
  });
  if (verdict.action === 'build') {
    const npm = process.env.npm_execpath;
    const build = npm
      ? spawnSync(process.execPath, [npm, 'run', 'build'], { cwd: root, stdio: 'inherit' })
      : spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
    process.exitCode = build.status ?? 1;
  } else if (verdict.action === 'skip') {
    process.stderr.write(
      'calls-connector: dist/ is already built and TypeScript is not installed: build skipped\n',
    );
  } else {
    process.stderr.write(`${verdict.message}\n`);
    process.exitCode = 1;
  }
}
