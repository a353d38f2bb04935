/**
 * The README is the user's reference: these tests keep it in step with the code it documents.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { configSchema } from '../../../src/config/schema.js';
import { buildProgram } from '../../../src/cli/main.js';

const readme = readFileSync(resolve(import.meta.dirname, '../../../README.md'), 'utf8');

interface JsonSchemaNode {
  properties?: Record<string, JsonSchemaNode>;
  anyOf?: JsonSchemaNode[];
  oneOf?: JsonSchemaNode[];
  allOf?: JsonSchemaNode[];
  items?: JsonSchemaNode;
}

/** Every configuration key that has no sub-keys, as a dotted path (`sources[].locations`). */
function leafKeys(node: JsonSchemaNode, path = ''): string[] {
  const keys: string[] = [];
  for (const [name, child] of Object.entries(node.properties ?? {})) {
    const childPath = path ? `${path}.${name}` : name;
    const below = leafKeys(child, childPath);
    keys.push(...(below.length > 0 ? below : [childPath]));
  }
  for (const sub of [...(node.anyOf ?? []), ...(node.oneOf ?? []), ...(node.allOf ?? [])])
    keys.push(...leafKeys(sub, path));
  if (node.items) keys.push(...leafKeys(node.items, `${path}[]`));
  return [...new Set(keys)];
}

describe('the README', () => {
  it('starts with the demo command and the test command', () => {
    const firstScreen = readme.split('\n').slice(0, 15).join('\n');
    expect(firstScreen).toContain('npx calls-connector demo');
    expect(firstScreen).toContain('npm test');
  });

  it('documents every configuration key in its reference', () => {
    const schema = z.toJSONSchema(configSchema, { io: 'input', unrepresentable: 'any' }) as JsonSchemaNode;
    const keys = leafKeys(schema);
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
});
