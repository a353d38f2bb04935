/**
 * The configuration's keys as data, read from the JSON Schema of `configSchema`: which keys a section allows
 * (for "did you mean" on a typo) and, for tests, every key and section. Pure; computed once.
 */
import { z } from 'zod';
import { configSchema } from './schema.js';

export interface JsonSchemaNode {
  properties?: Record<string, JsonSchemaNode>;
  additionalProperties?: unknown;
  anyOf?: JsonSchemaNode[];
  oneOf?: JsonSchemaNode[];
  allOf?: JsonSchemaNode[];
  items?: JsonSchemaNode;
  required?: string[];
}

let cached: JsonSchemaNode | undefined;

/** The JSON Schema of the configuration as written (input side: defaults optional). */
export function configJsonSchema(): JsonSchemaNode {
  cached ??= z.toJSONSchema(configSchema, { io: 'input', unrepresentable: 'any' }) as JsonSchemaNode;
  return cached;
}

/** A node and every branch of its unions, recursively. */
function withBranches(list: JsonSchemaNode[]): JsonSchemaNode[] {
  return list.flatMap((n) => [
    n,
    ...withBranches([...(n.anyOf ?? []), ...(n.oneOf ?? []), ...(n.allOf ?? [])]),
  ]);
}

/** The keys the schema allows at a path of the document (array indexes step into the items). */
export function knownKeysAt(path: readonly PropertyKey[]): string[] {
  let nodes: JsonSchemaNode[] = [configJsonSchema()];
  for (const part of path) {
    nodes = withBranches(nodes).flatMap((n) => {
      if (typeof part === 'number') return n.items === undefined ? [] : [n.items];
      const child = n.properties?.[String(part)];
      return child === undefined ? [] : [child];
    });
  }
  return [...new Set(withBranches(nodes).flatMap((n) => Object.keys(n.properties ?? {})))];
}

/** Every key and section as a dotted path, arrays marked `[]` (`sources[].locations`, `oauth.store`). */
function keyPaths(node: JsonSchemaNode, path: string, out: Map<string, boolean>): void {
  for (const [name, child] of Object.entries(node.properties ?? {})) {
    const childPath = path ? `${path}.${name}` : name;
    const before = out.size;
    keyPaths(child, childPath, out);
    // A leaf has nothing below it, whichever branch of a union defines it.
    if (!out.has(childPath)) out.set(childPath, out.size === before);
    else if (out.size > before) out.set(childPath, false);
  }
  for (const sub of [...(node.anyOf ?? []), ...(node.oneOf ?? []), ...(node.allOf ?? [])])
    keyPaths(sub, path, out);
  if (node.items) keyPaths(node.items, `${path}[]`, out);
}

/**
 * The configuration's keys in schema order, for the generated reference (docs/configuration.md) and the
 * tests that hold docs to the schema: `leaves` (keys that take a value), `all` (sections too), `sections`
 * (top level).
 */
export function configKeys(): { leaves: string[]; all: string[]; sections: string[] } {
  const schema = configJsonSchema();
  const out = new Map<string, boolean>();
  keyPaths(schema, '', out);
  return {
    leaves: [...out].filter(([, leaf]) => leaf).map(([key]) => key),
    all: [...out.keys()],
    sections: Object.keys(schema.properties ?? {}),
  };
}
