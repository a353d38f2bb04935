/**
 * The demo's webhooks: the sandbox sends a signed call.* delivery for each change to the first
 * instance's receiver, which nudges the owning location's poll, so changes come in within a second; a
 * reconciliation poll every RECONCILE_INTERVAL_MS publishes what a delivery missed. The live view says how each
 * change published since the start came: by a delivery's nudge, or by a reconciliation poll that no delivery
 * announced (a missed delivery).
 *
 * The config file the demo writes leaves the receiver off: the sandbox command it prints for running the
 * connector alone registers no webhook target, so the connector run alone polls at poll.intervalMs instead.
 */
import type { ConnectorMetrics } from '../metrics/metrics.js';
import type { WebhookArrivals } from './live-view.js';

/** The demo's reconciliation interval: short enough that a missed delivery is seen to be made up for. */
export const RECONCILE_INTERVAL_MS = 30_000;

/** The `webhooks` section of an instance's config: its receiver on loopback `port`, the secret in `secretFile`. */
export function demoWebhooksSection(port: number, secretFile: string): Record<string, unknown> {
  return {
    enabled: true,
    host: '127.0.0.1',
    port,
    reconcileIntervalMs: RECONCILE_INTERVAL_MS,
    signature: { secretEnv: [], secretFiles: [secretFile] },
  };
}

/** The receiver's URL on `port` (webhooks.path's default). */
export const demoReceiverUrl = (port: number): string => `http://127.0.0.1:${port}/webhooks/calls`;

/**
 * How the changes every instance published came (see the module comment): by webhook, the changes published
 * after a delivery announced them (nudge-to-published samples); by poll, the missed deliveries.
 */
export async function webhookArrivals(metrics: readonly ConnectorMetrics[]): Promise<WebhookArrivals> {
  let webhook = 0;
  let poll = 0;
  for (const m of metrics) {
    const timed = (await m.webhookNudgeToPublished.get()).values;
    webhook += timed.find((v) => v.metricName?.endsWith('_count') === true)?.value ?? 0;
    poll += (await m.webhookMissedDeliveries.get()).values.reduce((sum, v) => sum + v.value, 0);
  }
  return { webhook, poll };
}
