/**
 * Settings a configuration states that have no effect, because another setting takes their place: valid, so
 * not refused, but a person who wrote them expects them to act. `validate-config` prints each as a warning
 * and `run` logs each at start, naming the key that does act. Pure, over the file as written (before
 * defaults: only a key the person wrote is "set") and the validated config.
 */
import type { ConnectorConfig } from './schema.js';

/** A key that is set and ignored, why, and the key to set instead. */
export interface IgnoredSetting {
  /** The dotted key as written in the file. */
  key: string;
  /** The key whose value applies in its place. */
  instead: string;
  /** One sentence: what applies instead and what to do. */
  problem: string;
}

export function ignoredSettings(
  document: unknown,
  config: Pick<ConnectorConfig, 'poll' | 'webhooks'>,
): IgnoredSetting[] {
  const found: IgnoredSetting[] = [];
  // livePollIntervalMs: with the receiver on, the live interval is webhooks.reconcileIntervalMs, whatever
  // poll.intervalMs says (polls are the safety net; deliveries bring changes in).
  if (config.webhooks.enabled && isWritten(document, ['poll', 'intervalMs'])) {
    found.push({
      key: 'poll.intervalMs',
      instead: 'webhooks.reconcileIntervalMs',
      problem:
        `poll.intervalMs (${config.poll.intervalMs} ms) is ignored while webhooks.enabled: locations are polled ` +
        `every webhooks.reconcileIntervalMs (${config.webhooks.reconcileIntervalMs} ms) and nudged by ` +
        'deliveries; set webhooks.reconcileIntervalMs to change the interval, and remove poll.intervalMs',
    });
  }
  return found;
}

/** Whether the file as written has a value at `path` (a key present with null counts as not written). */
function isWritten(document: unknown, path: readonly string[]): boolean {
  let node: unknown = document;
  for (const key of path) {
    if (node === null || typeof node !== 'object' || Array.isArray(node)) return false;
    node = (node as Record<string, unknown>)[key];
  }
  return node !== undefined && node !== null;
}
