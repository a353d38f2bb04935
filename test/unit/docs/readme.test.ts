/**
 * The README is the user's reference: these tests keep it in step with the code it documents.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load.js';
import { buildProgram } from '../../../src/cli/main.js';
import { ExitCode } from '../../../src/errors/exit-codes.js';
import { configKeys } from '../../support/config-keys.js';
import { invocationsIn, unknownFlags } from '../../support/cli-invocations.js';

const readme = readFileSync(resolve(import.meta.dirname, '../../../README.md'), 'utf8');

describe('the README', () => {
  it('starts with the demo command and the test command', () => {
    const firstScreen = readme.split('\n').slice(0, 15).join('\n');
    expect(firstScreen).toContain('npx calls-connector demo');
    expect(firstScreen).toContain('npm test');
  });

  it('documents every configuration key in its reference', () => {
    const keys = configKeys().leaves;
    expect(keys.length).toBeGreaterThan(80);
    const missing = keys.filter((key) => !readme.includes(`\`${key}\``));
    expect(missing).toEqual([]);
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

  it('states the default the schema actually applies for every key whose default it writes as a literal', () => {
    // Documents with every optional section present, so nested defaults are filled in; the token store's
    // keys depend on its type, so once per type.
    const document = (store: Record<string, unknown>) => ({
      connector: { name: 'n' },
      api: { baseUrl: 'https://api.example.test' },
      oauth: { clientId: 'c', clientSecret: 's', redirectUri: 'https://app.example.test/cb', store },
      sources: [{ locations: ['6f1c2c36-9f59-4f3e-8a53-3c1f1e0c6a11'] }],
      kafka: { brokers: ['127.0.0.1:9092'], ssl: {} },
      schemaRegistry: { url: 'http://127.0.0.1:8081' },
    });
    const configs = [{ type: 'file' }, { type: 'kafka' }].map(
      (store) => parseConfig(document(store), {}) as unknown as Record<string, unknown>,
    );
    const schemaKeys = new Set(configKeys().leaves);
    const rows = [...readme.matchAll(/^\| `([a-zA-Z]+(?:\.[a-zA-Z]+|\[\])+)`\s*\| `([^`]*)`\s*\|/gm)];
    expect(rows.length).toBeGreaterThan(60);
    const wrong: string[] = [];
    for (const [, key, written] of rows) {
      // A default written as another key (`api.baseUrl`, `connector.name`) is resolved at run time.
      if (schemaKeys.has(written!)) continue;
      const path = key!.replace('[]', '.0').split('.');
      const actual = configs
        .map((config) =>
          path.reduce<unknown>((node, part) => (node as Record<string, unknown> | undefined)?.[part], config),
        )
        .find((value) => value !== undefined);
      if (JSON.stringify(actual) !== JSON.stringify(literal(written!)))
        wrong.push(`${key}: README says ${written}, schema gives ${JSON.stringify(actual)}`);
    }
    expect(wrong).toEqual([]);
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

/** A README default as written between backticks: `[408, 425]`, `true`, `100`, `data`. */
function literal(written: string): unknown {
  if (written.startsWith('[') && written.endsWith(']'))
    return written
      .slice(1, -1)
      .split(',')
      .map((item) => literal(item.trim()));
  if (written === 'true' || written === 'false') return written === 'true';
  if (/^-?\d+(\.\d+)?$/.test(written)) return Number(written);
  return written;
}
