/**
 * The import graph of src/, as the TypeScript compiler reads it: every import, type-only imports and
 * `export … from` included (the lint's no-cycle and no-restricted-imports rules skip type imports, and a type
 * import is still a dependency a reader follows). Two rules of docs/architecture.md ("Layers"):
 * - no import circle: the strongly connected components of the graph are single files;
 * - dependencies point one way: the sync core and the leaves (errors, logging, time) import no adapter, and
 *   the leaves import no core either (leaves: errors, logging, time, json, secrets).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../../..');
const src = join(root, 'src');

/** A string array `const name = [...]` of eslint.config.js: the lint and this test share one list. */
function eslintList(name: string): string[] {
  const text = readFileSync(join(root, 'eslint.config.js'), 'utf8');
  const body = new RegExp(`const ${name} = \\[([^\\]]*)\\]`).exec(text)?.[1];
  if (body === undefined) throw new Error(`eslint.config.js has no list ${name}`);
  return [...body.matchAll(/'([^']+)'/g)].map((match) => match[1] ?? '');
}

/** Folders of adapters and wiring, below src/ (eslint.config.js ADAPTERS). */
const ADAPTERS = eslintList('ADAPTERS');
/** Packages only adapters talk to, `*` for any name below a scope (eslint.config.js ADAPTER_LIBRARIES). */
const ADAPTER_LIBRARIES = eslintList('ADAPTER_LIBRARIES');
/** What adapters share so that neither imports the other (eslint.config.js ADAPTER_LEAVES). */
const ADAPTER_LEAVES = eslintList('ADAPTER_LEAVES');
const LEAVES = ['errors', 'logging', 'time', 'json', 'secrets'];
const CORE = 'sync';

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** Every module specifier a file names: imports, `export … from`, `import x = require()`, `import()` and import types. */
function specifiers(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, false);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier !== undefined &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      found.push(node.moduleSpecifier.text);
    } else if (
      ts.isImportEqualsDeclaration(node) &&
      ts.isExternalModuleReference(node.moduleReference) &&
      ts.isStringLiteral(node.moduleReference.expression)
    ) {
      found.push(node.moduleReference.expression.text);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] !== undefined &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      found.push(node.arguments[0].text);
    } else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    ) {
      found.push(node.argument.literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/**
 * The file a relative specifier names (ESM specifiers end in .js for a .ts file); undefined for a package or a
 * file that is not a module (`.json`, ...).
 */
function resolveSpecifier(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.') || /\.(?!js$|ts$)\w+$/.test(specifier)) return undefined;
  const base = resolve(dirname(from), specifier);
  const candidates = [base.replace(/\.js$/, '.ts'), base, `${base}.ts`, join(base, 'index.ts')];
  const file = candidates.find((candidate) => candidate.endsWith('.ts') && existsSync(candidate));
  if (file === undefined) throw new Error(`${relative(root, from)}: cannot resolve '${specifier}'`);
  return file;
}

/** Whether a bare specifier names one of ADAPTER_LIBRARIES (a package, or a path inside one). */
function isAdapterLibrary(specifier: string): boolean {
  return ADAPTER_LIBRARIES.some((pattern) =>
    pattern.endsWith('/*')
      ? specifier.startsWith(pattern.slice(0, -1))
      : specifier === pattern || specifier.startsWith(`${pattern}/`),
  );
}

/** File (relative to the root) → the files (relative to the root) it imports under src/. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(src).sort()) {
    const targets = specifiers(file)
      .map((specifier) => resolveSpecifier(file, specifier))
      .filter((target): target is string => target !== undefined && target.startsWith(src))
      .map((target) => relative(root, target));
    graph.set(relative(root, file), [...new Set(targets)]);
  }
  return graph;
}

/** Tarjan's strongly connected components, each with more than one file or a file importing itself. */
function circles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const lowLink = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const connect = (file: string): void => {
    index.set(file, index.size);
    lowLink.set(file, index.get(file) ?? 0);
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file) ?? []) {
      if (!index.has(target)) {
        connect(target);
        lowLink.set(file, Math.min(lowLink.get(file) ?? 0, lowLink.get(target) ?? 0));
      } else if (onStack.has(target)) {
        lowLink.set(file, Math.min(lowLink.get(file) ?? 0, index.get(target) ?? 0));
      }
    }
    if (lowLink.get(file) !== index.get(file)) return;
    const component: string[] = [];
    for (let member = stack.pop(); member !== undefined; member = stack.pop()) {
      onStack.delete(member);
      component.push(member);
      if (member === file) break;
    }
    if (component.length > 1 || (graph.get(file) ?? []).includes(file)) components.push(component);
  };
  for (const file of graph.keys()) if (!index.has(file)) connect(file);
  return components;
}

/**
 * One circle through a component's files in import order, from its first file (alphabetically) back to it:
 * `a.ts → b.ts → c.ts → a.ts`. The shortest way back, found breadth first, so that the message names a real
 * path of imports a reader can follow.
 */
function circleThrough(component: readonly string[], graph: ReadonlyMap<string, readonly string[]>): string {
  const members = new Set(component);
  const start = [...component].sort()[0] ?? '';
  const previous = new Map<string, string>();
  const queue = [start];
  for (let head = 0; head < queue.length; head++) {
    const file = queue[head] ?? '';
    for (const target of graph.get(file) ?? []) {
      if (!members.has(target) || previous.has(target)) continue;
      previous.set(target, file);
      if (target === start) head = queue.length;
      else queue.push(target);
    }
  }
  const path = [start];
  for (let file = previous.get(start); file !== undefined && file !== start; file = previous.get(file))
    path.unshift(file);
  path.unshift(start);
  const more =
    component.length > path.length - 1
      ? ` (a knot of ${component.length} files: ${[...component].sort().join(', ')})`
      : '';
  return `${path.join(' → ')}${more}`;
}

function folderOf(file: string): string {
  return relative(src, join(root, file)).split('/')[0] ?? '';
}

describe('the circle finder', () => {
  it('names each circle file by file in import order, and no file outside one', () => {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts', 'd.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', ['e.ts']],
      ['e.ts', []],
      ['f.ts', ['f.ts']],
    ]);
    expect(circles(graph).map((component) => circleThrough(component, graph))).toEqual([
      'a.ts → b.ts → c.ts → a.ts',
      'f.ts → f.ts',
    ]);
  });
});

describe('the import graph of src/', () => {
  const graph = importGraph();

  it('has no import circle, type imports included', () => {
    expect(graph.size).toBeGreaterThan(100);
    const found = circles(graph).map((component) => circleThrough(component, graph));
    // On failure: each line is a circle, file by file in import order; break it at one of its imports.
    expect(found).toEqual([]);
  });

  it('points one way, type imports included: the core and the leaves import no adapter, the leaves no core', () => {
    const refused: string[] = [];
    for (const [file, targets] of graph) {
      const folder = folderOf(file);
      if (folder !== CORE && !LEAVES.includes(folder)) continue;
      for (const target of targets) {
        const targetFolder = folderOf(target);
        if (
          ADAPTERS.includes(targetFolder) ||
          ADAPTER_LEAVES.includes(targetFolder) ||
          (LEAVES.includes(folder) && targetFolder === CORE)
        )
          refused.push(`${file} imports ${target}`);
      }
    }
    expect(refused).toEqual([]);
  });

  it("keeps the adapters' leaves below every adapter: they import no adapter and not the core, type imports included", () => {
    expect(ADAPTER_LEAVES).toContain('https');
    const refused: string[] = [];
    for (const [file, targets] of graph) {
      if (!ADAPTER_LEAVES.includes(folderOf(file))) continue;
      for (const target of targets) {
        const targetFolder = folderOf(target);
        if (ADAPTERS.includes(targetFolder) || targetFolder === CORE)
          refused.push(`${file} imports ${target}`);
      }
    }
    expect(refused).toEqual([]);
  });

  it('keeps the adapters that talk to a service (api, auth, kafka) apart: none imports another, type imports included', () => {
    const SERVICE_ADAPTERS = ['api', 'auth', 'kafka'];
    const refused: string[] = [];
    for (const [file, targets] of graph) {
      const folder = folderOf(file);
      if (!SERVICE_ADAPTERS.includes(folder)) continue;
      for (const target of targets) {
        const targetFolder = folderOf(target);
        if (targetFolder !== folder && SERVICE_ADAPTERS.includes(targetFolder))
          refused.push(`${file} imports ${target}`);
      }
    }
    // On failure: move what both use to an adapters' leaf, or let the wiring (runtime/) plug one into the other.
    expect(refused).toEqual([]);
  });

  it('keeps the adapter libraries out of the core and the leaves, type imports included', () => {
    expect(ADAPTERS).toContain('kafka');
    expect(ADAPTER_LIBRARIES).toContain('kafkajs');
    const refused: string[] = [];
    for (const file of sourceFiles(src)) {
      const folder = relative(src, file).split('/')[0] ?? '';
      if (folder !== CORE && !LEAVES.includes(folder)) continue;
      for (const specifier of specifiers(file))
        if (isAdapterLibrary(specifier)) refused.push(`${relative(root, file)} imports ${specifier}`);
    }
    expect(refused).toEqual([]);
  });

  it('recognises a library by its package name, a path inside it and its scope', () => {
    expect(
      ['kafkajs', 'undici/types', '@kafkajs/confluent-schema-registry', 'zod'].every(isAdapterLibrary),
    ).toBe(true);
    expect(['node:fs', 'kafkajs-extra', './kafkajs.js'].some(isAdapterLibrary)).toBe(false);
  });

  it('has no circle between folders either: two adapters never import each other, type imports included', () => {
    const folders = new Map<string, Set<string>>();
    for (const [file, targets] of graph)
      for (const target of targets) {
        const from = folderOf(file);
        const to = folderOf(target);
        if (from === to || from.endsWith('.ts') || to.endsWith('.ts')) continue;
        folders.set(from, (folders.get(from) ?? new Set()).add(to));
      }
    const edges = new Map([...folders].map(([from, to]) => [from, [...to]]));
    const found = circles(edges).map((component) => circleThrough(component, edges));
    // On failure: each line is a circle of folders; the one below imports the one above through a port instead.
    expect(found).toEqual([]);
  });
});
