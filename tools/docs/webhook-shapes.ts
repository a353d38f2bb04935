/**
 * The ready configurations of docs/webhooks.md ("Ready configurations, per sender"): each sender's
 * `webhooks` keys in a yaml block after a `<!-- shape: NAME -->` marker. Read by the tests and the bench so
 * that what they check is what users copy. Pure: over the doc's text.
 */
import { parse } from 'yaml';

/** The shapes the doc marks, in its order, each with its `webhooks` keys as written. */
export function documentedShapes(markdown: string): Map<string, Record<string, unknown>> {
  const shapes = new Map<string, Record<string, unknown>>();
  for (const match of markdown.matchAll(/<!-- shape: ([\w-]+) -->\s*```yaml\n([\s\S]*?)```/g))
    shapes.set(match[1] ?? '', parse(match[2] ?? '') as Record<string, unknown>);
  return shapes;
}

/** The doc's configuration a sandbox shape is received with (the sandbox's `v1a` is Standard Webhooks'). */
export function documentedShapeOf(sandboxShape: string): string {
  return sandboxShape === 'standard-webhooks-v1a' ? 'standard-webhooks' : sandboxShape;
}
