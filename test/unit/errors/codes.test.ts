import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, ExitCode, type ErrorClass } from '../../../src/errors/index.js';

const classes = (entry: { class: ErrorClass | readonly ErrorClass[] }): readonly ErrorClass[] =>
  typeof entry.class === 'string' ? [entry.class] : entry.class;

describe('the error-code catalogue', () => {
  it('lists only codes that the code base throws, so a code no longer used cannot linger with its exit code or hint', () => {
    // The product and the dev tooling it loads (tools/devstack, for demo) throw catalogued codes.
    const sources = ['../../../src/', '../../../tools/devstack/']
      .flatMap((dir) => readdirSync(new URL(dir, import.meta.url), { recursive: true, withFileTypes: true }))
      .filter((entry) => entry.isFile() && entry.name.endsWith('.ts') && entry.name !== 'codes.ts')
      .map((entry) => readFileSync(join(entry.parentPath, entry.name), 'utf8'))
      .join('\n');
    const codes = Object.keys(ERROR_CODES);
    expect(codes.length).toBeGreaterThan(80);
    expect(codes.filter((code) => !sources.includes(`'${code}'`))).toEqual([]);
  });

  it('makes every configuration error (exit 2) and every healing exception fatal', () => {
    const notFatal = Object.entries(ERROR_CODES).filter(
      ([, entry]) =>
        (entry.exit === ExitCode.USAGE || 'healing' in entry) && !classes(entry).includes('fatal'),
    );
    expect(notFatal).toEqual([]);
  });
});
