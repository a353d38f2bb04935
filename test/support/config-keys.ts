/** The configuration keys of `configSchema`, read from its JSON Schema, for tests that hold docs to it. */
import { configJsonSchema, type JsonSchemaNode } from '../../src/config/config-keys.js';

/** Every key and section as a dotted path, arrays marked `[]` (`sources[].locations`, `oauth.store`). */
function paths(node: JsonSchemaNode, path: string, out: Map<string, boolean>): void {
  for (const [name, child] of Object.entries(node.properties ?? {})) {
    const childPath = path ? `${path}.${name}` : name;
    const before = out.size;
    paths(child, childPath, out);
    // A leaf has nothing below it, whichever branch of a union defines it.
    if (!out.has(childPath)) out.set(childPath, out.size === before);
    else if (out.size > before) out.set(childPath, false);
  }
  for (const sub of [...(node.anyOf ?? []), ...(node.oneOf ?? []), ...(node.allOf ?? [])])
    paths(sub, path, out);
  if (node.items) paths(node.items, `${path}[]`, out);
}

export function configKeys(): { leaves: string[]; all: string[]; sections: string[] } {
  const schema = configJsonSchema();
  const out = new Map<string, boolean>();
  paths(schema, '', out);
  return {
    leaves: [...out].filter(([, leaf]) => leaf).map(([key]) => key),
    all: [...out.keys()],
    sections: Object.keys(schema.properties ?? {}),
  };
}
