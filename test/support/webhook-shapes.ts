/**
 * The ready configurations of docs/webhooks.md ("Ready configurations, per sender"), read from the doc itself
 * so that the tests check what users copy: the `webhooks` section of a sender's shape, parsed as the
 * connector parses it.
 */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { parseConfig } from '../../src/config/load.js';
import type { WebhooksConfig } from '../../src/config/schema.js';
import { MINIMAL_CONFIG } from './minimal-config.js';

const DOC = readFileSync(new URL('../../docs/webhooks.md', import.meta.url), 'utf8');

/** The names the doc marks (`<!-- shape: NAME -->` before a yaml block), in its order. */
export const DOCUMENTED_SHAPES = [...DOC.matchAll(/<!-- shape: ([\w-]+) -->/g)].map((m) => m[1] ?? '');

/** The `webhooks` keys of `name`'s ready configuration, as written. */
export function documentedShape(name: string): Record<string, unknown> {
  const match = new RegExp(`<!-- shape: ${name} -->\\s*\`\`\`yaml\\n([\\s\\S]*?)\`\`\``).exec(DOC);
  if (match === null) throw new Error(`docs/webhooks.md has no shape ${name}`);
  return parse(match[1] ?? '') as Record<string, unknown>;
}

/** The parsed `webhooks` section of an enabled receiver in `name`'s shape, with `extra` keys merged in. */
export function shapeSettings(
  name: string,
  extra: { signature?: Record<string, unknown> } = {},
): WebhooksConfig {
  const shape = documentedShape(name);
  const signature = { ...(shape['signature'] as object), ...extra.signature };
  return parseConfig({ ...MINIMAL_CONFIG, webhooks: { enabled: true, ...shape, signature } }, {}).webhooks;
}
