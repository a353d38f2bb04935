/**
 * The npm scripts a newcomer runs first: a bare-Node install (`--omit=dev`, no TypeScript) must not die on `tsc`
 * inside `prepare`, and `npm test` must say what the machine lacks before it builds or runs anything.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module of the repository's scripts, without type declarations
import { BUILT_FILES, decide } from '../../../scripts/prepare.mjs';

type Verdict = { action: 'build' | 'skip' | 'fail'; message?: string };
const decideTyped = decide as (facts: { typescriptInstalled: boolean; built: boolean }) => Verdict;

const pkg = JSON.parse(readFileSync(resolve(import.meta.dirname, '../../../package.json'), 'utf8')) as {
  scripts: Record<string, string>;
  bin: Record<string, string>;
};

describe('prepare', () => {
  it('runs the script that decides, not the build itself', () => {
    expect(pkg.scripts.prepare).toBe('node scripts/prepare.mjs');
  });

  it('builds when TypeScript is installed, built or not', () => {
    expect(decideTyped({ typescriptInstalled: true, built: false }).action).toBe('build');
    expect(decideTyped({ typescriptInstalled: true, built: true }).action).toBe('build');
  });

  it('keeps a built checkout as it is on a bare-Node install (no TypeScript)', () => {
    expect(decideTyped({ typescriptInstalled: false, built: true }).action).toBe('skip');
  });

  it('says how to build when there is neither TypeScript nor a build', () => {
    const verdict = decideTyped({ typescriptInstalled: false, built: false });
    expect(verdict.action).toBe('fail');
    expect(verdict.message).toMatch(/`npm ci`.*then `npm prune --omit=dev`/);
  });

  it('counts the CLI the package runs as part of the build', () => {
    expect(BUILT_FILES as string[]).toContain(pkg.bin['calls-connector']);
  });
});

describe('npm test', () => {
  it('checks the machine (promtool, a stack) before it builds', () => {
    expect(pkg.scripts.pretest).toMatch(/^node scripts\/preflight\.mjs && npm run build$/);
  });
});
