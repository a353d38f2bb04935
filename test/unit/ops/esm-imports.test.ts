/**
 * The built CLI (what the Docker image and the npm bin run) is loaded by Node's own ESM loader, which sees
 * only the named exports it can detect statically in a CommonJS package; Vitest's transform is more
 * lenient, so a named import that works in tests can still crash `node dist/src/cli/main.js` at start
 * (e.g. `import { ConfigResourceTypes } from 'kafkajs'`). This checks every named value import from a
 * dependency against what Node's loader really provides.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const srcDir = fileURLToPath(new URL('../../../src', import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(join(dir, entry.name))
      : entry.name.endsWith('.ts')
        ? [join(dir, entry.name)]
        : [],
  );
}

/** `import { a, b as c, type T } from 'pkg'` of bare specifiers (not relative, not node:), values only. */
function namedValueImports(): { file: string; specifier: string; name: string }[] {
  const found: { file: string; specifier: string; name: string }[] = [];
  for (const file of sourceFiles(srcDir)) {
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(
      /^import\s+(?!type\s)(?:[\w$]+\s*,\s*)?\{([^}]*)\}\s*from\s*'([^']+)'/gm,
    )) {
      const [, names = '', specifier = ''] = match;
      if (specifier.startsWith('.') || specifier.startsWith('node:')) continue;
      for (const raw of names.split(',')) {
        const name =
          raw
            .trim()
            .split(/\s+as\s+/)[0]
            ?.trim() ?? '';
        if (name === '' || name.startsWith('type ')) continue;
        found.push({ file: file.slice(srcDir.length + 1), specifier, name });
      }
    }
  }
  return found;
}

describe('named imports from dependencies', () => {
  it('exist under the Node ESM loader the built CLI runs with', async () => {
    const imports = namedValueImports();
    expect(imports.length).toBeGreaterThan(10);
    const missing: string[] = [];
    for (const { file, specifier, name } of imports) {
      // Object.keys, not `in`: Vitest's interop proxies the namespace and also answers for the default export's properties.
      const exported = Object.keys((await import(specifier)) as object);
      if (!exported.includes(name)) missing.push(`${file}: { ${name} } from '${specifier}'`);
    }
    expect(missing).toEqual([]);
  });
});
