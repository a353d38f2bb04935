/**
 * What the documentation and deployment files name must exist in the code: CLI flags (README, docs,
 * docker-compose.yml commands, the Dockerfile's CMD), metric names and configuration keys. Each of these can
 * be renamed in the code without any other test noticing.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { buildProgram } from '../../../src/cli/main.js';
import { testMetrics } from '../../support/metrics.js';
import { configKeys } from '../../support/config-keys.js';
import { invocationsIn, unknownFlags } from '../../support/cli-invocations.js';

const root = new URL('../../../', import.meta.url);
const read = (path: string): string => readFileSync(new URL(path, root), 'utf8');
const docs = [
  'README.md',
  ...readdirSync(new URL('docs/', root))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
  // The workspace packages' docs (the sandbox's is its README).
  ...readdirSync(new URL('packages/', root))
    .map((name) => `packages/${name}/README.md`)
    .filter((path) => existsSync(new URL(path, root))),
].map((path) => ({ path, text: read(path) }));

describe('names used in the docs and deployment files', () => {
  it('runs every documented command line with flags the command has', () => {
    const program = buildProgram();
    expect(docs.flatMap(({ text }) => invocationsIn(text)).length).toBeGreaterThan(20);
    const unknown = docs.flatMap(({ path, text }) =>
      invocationsIn(text).flatMap((words) =>
        unknownFlags(words, program).map((flag) => `${path}: ${flag} in calls-connector ${words.join(' ')}`),
      ),
    );
    expect(unknown).toEqual([]);
  });

  it('starts the compose services and the image with flags the CLI has', () => {
    const compose = parse(read('docker-compose.yml'), { merge: true }) as {
      services: Record<string, { image?: string; command?: string[]; entrypoint?: string[] }>;
    };
    const program = buildProgram();
    // Services of the connector image without their own entrypoint run the CLI with `command` as arguments.
    const cliServices = Object.entries(compose.services).filter(
      ([, s]) => (s.image ?? '').startsWith('calls-connector:') && s.entrypoint === undefined,
    );
    expect(cliServices.map(([name]) => name).sort()).toEqual([
      'connector',
      'connector-distributed',
      'sandbox',
    ]);
    const dockerCmd = /^CMD (\[.*\])$/m.exec(read('Dockerfile'))?.[1];
    expect(dockerCmd).toBeDefined();
    const commandLines: Array<[string, string[]]> = [
      ...cliServices.map(([name, s]): [string, string[]] => [`compose ${name}`, s.command ?? []]),
      ['Dockerfile CMD', JSON.parse(dockerCmd!) as string[]],
    ];
    for (const [where, words] of commandLines) {
      expect(
        program.commands.map((c) => c.name()),
        where,
      ).toContain(words[0]);
      expect(unknownFlags(words, program), where).toEqual([]);
    }
  });

  it('names only metrics the connector exposes', async () => {
    const metrics = await testMetrics({ processMetrics: true }).registry.getMetricsAsJSON();
    const exposed = new Set(
      metrics.flatMap((m) => [m.name, `${m.name}_bucket`, `${m.name}_sum`, `${m.name}_count`]),
    );
    const named = docs.flatMap(({ text }) => [...text.matchAll(/calls_connector_[a-z0-9_]+/g)]);
    expect(named.length).toBeGreaterThan(20);
    const unknown = docs.flatMap(({ path, text }) =>
      [...text.matchAll(/calls_connector_[a-z0-9_]*[a-z0-9](?![a-z0-9_]*\*)/g)]
        .map((m) => m[0])
        .filter((name) => !exposed.has(name))
        .map((name) => `${path}: ${name}`),
    );
    expect(unknown).toEqual([]);
  });

  it('names only configuration keys the schema has (or values of the Helm chart, whose `webhooks` block shares the name)', () => {
    const { all, sections } = configKeys();
    const paths = new Set([...all.map((key) => key.replaceAll('[]', '')), ...chartValuePaths()]);
    const keyPattern = new RegExp(
      `\`((?:${sections.join('|')})(?:\\[\\])?(?:\\.[a-zA-Z][a-zA-Z0-9]*)+)`,
      'g',
    );
    expect(docs.flatMap(({ text }) => [...text.matchAll(keyPattern)]).length).toBeGreaterThan(100);
    const unknown = docs.flatMap(({ path, text }) =>
      [...text.matchAll(keyPattern)]
        .map((m) => m[1]!.replace('[]', ''))
        .filter((key) => !paths.has(key))
        .map((key) => `${path}: ${key}`),
    );
    expect(unknown).toEqual([]);
  });

  it('names only error codes and environment variables that the code, the bench, the tools, the deployment files or CI use', () => {
    const sources = ['src', 'scripts', 'test/support', 'bench', 'tools']
      .flatMap((dir) => filesUnder(fileURLToPath(new URL(dir, root))))
      .concat(['Dockerfile', 'docker-compose.yml', '.ci/run'].map((f) => fileURLToPath(new URL(f, root))))
      .map((file) => readFileSync(file, 'utf8'))
      .join('\n');
    const named = new Set(
      docs.flatMap(({ text }) => [...text.matchAll(/`([A-Z][A-Z0-9]+(?:_[A-Z0-9]+)+)`/g)].map((m) => m[1]!)),
    );
    expect(named.size).toBeGreaterThan(10);
    expect([...named].filter((name) => !new RegExp(`\\b${name}\\b`).test(sources))).toEqual([]);
  });

  it('links and names only files that exist in the repository', () => {
    const missing: string[] = [];
    let seen = 0;
    for (const { path, text } of docs) {
      const links = [...text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)].map((m) => m[1]!);
      const named = [...text.matchAll(/`((?:src|test|config|docs|schemas|scripts|bench)\/[\w./-]+)`/g)].map(
        (m) => m[1]!,
      );
      for (const target of [...links.filter((l) => !/^[a-z]+:/.test(l)), ...named]) {
        seen += 1;
        const candidates = [join(dirname(path), target), target].map((p) => fileURLToPath(new URL(p, root)));
        if (!candidates.some((file) => existsSync(file))) missing.push(`${path}: ${target}`);
      }
    }
    expect(seen).toBeGreaterThan(20);
    expect(missing).toEqual([]);
  });
});

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(dir, entry.name)) : [join(dir, entry.name)],
  );
}

interface ValuesSchemaNode {
  properties?: Record<string, ValuesSchemaNode>;
}

/** Every key path of the Helm chart's values (deploy/helm/calls-connector/values.schema.json). */
function chartValuePaths(): string[] {
  const schema = JSON.parse(read('deploy/helm/calls-connector/values.schema.json')) as ValuesSchemaNode;
  const walk = (node: ValuesSchemaNode, prefix: string): string[] =>
    Object.entries(node.properties ?? {}).flatMap(([name, child]) => {
      const path = prefix === '' ? name : `${prefix}.${name}`;
      return [path, ...walk(child, path)];
    });
  return walk(schema, '');
}
