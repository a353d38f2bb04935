/**
 * The lint's package boundaries (eslint.config.js, docs/architecture.md): the workspace packages import nothing
 * of the product, and the product imports a workspace package by its name and public entry only.
 */
import { resolve } from 'node:path';
import { ESLint } from 'eslint';
import { beforeAll, describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../../..');
// Only the import rule, without type information (it needs none): a lint of one snippet in well under a second.
const eslint = new ESLint({
  cwd: root,
  ruleFilter: ({ ruleId }) => ruleId === 'no-restricted-imports',
  overrideConfig: { languageOptions: { parserOptions: { projectService: false } } },
});

/** The no-restricted-imports messages for `source` as if it were the file at `path` (relative to the root). */
async function refusals(path: string, source: string): Promise<string[]> {
  const [result] = await eslint.lintText(source, { filePath: resolve(root, path) });
  return (result?.messages ?? []).map((m) => `${m.ruleId ?? 'parse'}: ${m.message}`);
}

describe('package boundaries', () => {
  // The first lint loads eslint.config.js and its plugins: seconds on a busy machine, more than a test's
  // default timeout. Loaded here, once, with time to spare; each test then lints one snippet.
  beforeAll(async () => {
    await refusals('src/demo/demo.ts', 'export {};\n');
  }, 60_000);

  it('refuses a sandbox module that imports product code', async () => {
    expect(
      await refusals(
        'packages/sandbox/src/tls.ts',
        "import { loadConfig } from '../../../src/config/load.js';\nexport const x = loadConfig;\n",
      ),
    ).toEqual([expect.stringContaining('imports nothing of the product')]);
  });

  it('refuses product code that reaches into the sandbox by path or by a deep import', async () => {
    for (const specifier of ['../../packages/sandbox/src/index.js', '@calls-connector/sandbox/src/tls.js'])
      expect(
        await refusals(
          'src/demo/demo.ts',
          `import { startSandbox } from '${specifier}';\nexport const x = startSandbox;\n`,
        ),
        specifier,
      ).toEqual([expect.stringContaining('by its name and public entry only')]);
  });

  it('accepts product code that imports the sandbox package by its name', async () => {
    expect(
      await refusals(
        'src/demo/demo.ts',
        "import { startSandbox } from '@calls-connector/sandbox';\nexport const x = startSandbox;\n",
      ),
    ).toEqual([]);
  });
});
