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
