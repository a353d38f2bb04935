/**
 * The README is the user's reference: these tests keep it in step with the code it documents.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../../src/cli/main.js';
import { ExitCode } from '../../../src/errors/exit-codes.js';
import { brokenLinks } from '../../support/markdown-links.js';
import { invocationsIn, unknownFlags } from '../../support/cli-invocations.js';

const readme = readFileSync(resolve(import.meta.dirname, '../../../README.md'), 'utf8');

describe('the README', () => {
  it('starts with the demo command and the test command', () => {
    const firstScreen = readme.split('\n').slice(0, 15).join('\n');
    expect(firstScreen).toContain('npx calls-connector demo');
    expect(firstScreen).toContain('npm test');
  });

  it('says on its first screen what the two commands need and how to get it', () => {
    const firstScreen = readme.split('\n').slice(0, 25).join('\n');
    for (const needed of ['Node ≥ 22', 'Java 21+', 'Maven', 'STACK_JAVA_HOME', 'promtool', 'apt-get install'])
      expect(firstScreen).toContain(needed);
    // The first run's download is said before anyone waits for it.
    expect(firstScreen).toMatch(/first run downloads about \d+ MB/i);
    expect(firstScreen).toContain('npm run stack:down');
  });

  it('stays a front page: at most about 250 lines', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(260);
  });

  it('links to a file for every relative link, and to a heading that exists for every anchor', () => {
    const broken = brokenLinks('README.md');
    expect(broken).toEqual([]);
  });

  it('points to the generated configuration reference', () => {
    expect(readme).toContain('(docs/configuration.md)');
  });

  it('mentions every CLI command', () => {
    const commands = buildProgram().commands.map((c) => c.name());
    expect(commands).toEqual(
      expect.arrayContaining(['run', 'demo', 'sandbox', 'auth', 'offsets', 'validate-config']),
    );
    const missing = commands.filter((name) => !readme.includes(`calls-connector ${name}`));
    expect(missing).toEqual([]);
  });

  it('lists every runtime dependency with a reason', () => {
    const pkg = JSON.parse(readFileSync(resolve(import.meta.dirname, '../../../package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    const section = readme.slice(readme.indexOf('## Runtime dependencies'));
    const missing = Object.keys(pkg.dependencies).filter((name) => !section.includes(`\`${name}\``));
    expect(missing).toEqual([]);
  });

  it('lists exactly the exit codes the CLI uses', () => {
    const sentence = /Exit codes: (.*?)\n\n/s.exec(readme)?.[1] ?? '';
    const documented = [...sentence.matchAll(/`(\d+)`/g)].map((m) => Number(m[1])).sort((a, b) => a - b);
    expect(documented).toEqual(Object.values(ExitCode).sort((a, b) => a - b));
  });

  it('shows only flags that the commands it runs have', () => {
    const invocations = invocationsIn(readme);
    expect(invocations.length).toBeGreaterThan(10);
    const program = buildProgram();
    const unknown = invocations.flatMap((words) =>
      unknownFlags(words, program).map((flag) => `${flag} in: calls-connector ${words.join(' ')}`),
    );
    expect(unknown).toEqual([]);
  });
});
