/**
 * The webhook receiver's metrics (webhooks.enabled): every delivery by what became of it, and every nudge by
 * how its location was found. Label values are the fixed words below, never anything from a payload.
 */
import { Counter, type Registry } from 'prom-client';

/** Every outcome a delivery can have (src/webhooks/receiver.ts), pre-registered at 0 so rates work at once. */
export const WEBHOOK_DELIVERY_OUTCOMES = [
  'accepted',
  'ignored',
  'unsigned',
  'bad_signature',
  'stale_timestamp',
  'replayed',
  'malformed',
  'too_large',
  'unavailable',
] as const;

/** How a nudge's location was found (src/webhooks/nudge-resolution.ts). */
export const WEBHOOK_NUDGE_RESOLUTIONS = ['payload_location', 'indexed_uid', 'grant_fanout'] as const;

export function webhookMetrics(registry: Registry) {
  const registers = [registry];
  return {
    webhookDeliveries: new Counter({
      name: 'calls_connector_webhook_deliveries_total',
      help:
        'Webhook deliveries, by outcome (accepted, ignored, unsigned, bad_signature, stale_timestamp, replayed, ' +
        'malformed, too_large, unavailable).',
      labelNames: ['outcome'] as const,
      registers,
    }),
    webhookNudges: new Counter({
      name: 'calls_connector_webhook_nudges_total',
      help: 'Nudges taken from call.* webhooks, by how the location was found (payload_location, indexed_uid, grant_fanout).',
      labelNames: ['resolution'] as const,
      registers,
    }),
  };
}

/** Sets every series to 0 so that a dashboard's rate() sees the first refusal (called when the receiver starts). */
export function primeWebhookMetrics(metrics: ReturnType<typeof webhookMetrics>): void {
  for (const outcome of WEBHOOK_DELIVERY_OUTCOMES) metrics.webhookDeliveries.inc({ outcome }, 0);
  for (const resolution of WEBHOOK_NUDGE_RESOLUTIONS) metrics.webhookNudges.inc({ resolution }, 0);
}
