/**
 * The ready configurations of docs/webhooks.md, read from the doc itself (tools/docs/webhook-shapes.ts) so that
 * the tests check what users copy: a sender's `webhooks` section parsed as the connector parses it.
 */
import { readFileSync } from 'node:fs';
import { parseConfig } from '../../src/config/load.js';
import type { WebhooksConfig } from '../../src/config/schema.js';
import { documentedShapes } from '../../tools/docs/webhook-shapes.js';
import { MINIMAL_CONFIG } from './minimal-config.js';

const SHAPES = documentedShapes(readFileSync(new URL('../../docs/webhooks.md', import.meta.url), 'utf8'));

/** The names the doc marks, in its order. */
export const DOCUMENTED_SHAPES = [...SHAPES.keys()];

/** The parsed `webhooks` section of an enabled receiver in `name`'s shape, with `extra` signature keys. */
export function shapeSettings(
  name: string,
  extra: { signature?: Record<string, unknown> } = {},
): WebhooksConfig {
  const shape = SHAPES.get(name);
  if (shape === undefined) throw new Error(`docs/webhooks.md has no shape ${name}`);
  const signature = { ...(shape['signature'] as object), ...extra.signature };
  return parseConfig({ ...MINIMAL_CONFIG, webhooks: { enabled: true, ...shape, signature } }, {}).webhooks;
}
