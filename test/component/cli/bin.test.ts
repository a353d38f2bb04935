/**
 * The installed `calls-connector` command is package.json's bin, executed directly (as npx and npm's .bin links
 * do). Regression: a rebuild by `pretest` once left it without its executable bit ("Permission denied").
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../../..');
const pkg = JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8')) as {
  version: string;
  bin: Record<string, string>;
};
const bin = resolve(root, pkg.bin['calls-connector'] ?? '');

describe('the calls-connector bin', () => {
  it('is an executable file with a node shebang', () => {
    expect(statSync(bin).mode & 0o111).not.toBe(0);
    expect(readFileSync(bin, 'utf8').split('\n')[0]).toBe('#!/usr/bin/env node');
  });

  it('runs directly and prints the package version', () => {
    const result = spawnSync(bin, ['--version'], { encoding: 'utf8' });
    expect(result.error).toBeUndefined();
    expect(result.stdout.trim()).toBe(pkg.version);
    expect(result.status).toBe(0);
  });
});
