/**
 * The webhook receiver's metrics (webhooks.enabled): every delivery by what became of it, and every nudge by
 * how its location was found. Label values are the fixed words below, never anything from a payload.
 */
import { Counter, Histogram, type Registry } from 'prom-client';

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

/**
 * Why a connection was closed as it opened, before any byte of it was read (src/webhooks/receiver.ts):
 * `max_connections` (webhooks.limits.maxConnections open in all), `per_address` (maxConnectionsPerAddress open
 * from its address).
 */
export const WEBHOOK_CONNECTION_REFUSALS = ['max_connections', 'per_address'] as const;

/** How a nudge's location was found (src/webhooks/nudge-resolution.ts). */
export const WEBHOOK_NUDGE_RESOLUTIONS = ['payload_location', 'indexed_uid', 'grant_fanout'] as const;

/** What a nudge did to each location it named (src/sync/scheduler/scheduler.ts, NudgeOutcome). */
export const WEBHOOK_NUDGE_OUTCOMES = ['due_now', 'follow_up', 'coalesced', 'held', 'unknown'] as const;

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
    webhookConnectionsRefused: new Counter({
      name: 'calls_connector_webhook_connections_refused_total',
      help:
        'Connections to the webhook receiver closed as they opened, by reason (max_connections: the overall cap ' +
        'was reached; per_address: the cap of their source address was).',
      labelNames: ['reason'] as const,
      registers,
    }),
    webhookNudges: new Counter({
      name: 'calls_connector_webhook_nudges_total',
      help: 'Nudges taken from call.* webhooks, by how the location was found (payload_location, indexed_uid, grant_fanout).',
      labelNames: ['resolution'] as const,
      registers,
    }),
    webhookNudgeOutcomes: new Counter({
      name: 'calls_connector_webhook_nudge_outcomes_total',
      help:
        'What each nudge did to each location it named: due_now (its live poll due now as a nudged poll), follow_up ' +
        '(one more poll after the one running), coalesced (nudged already, or a follow-up already asked), held (backoff ' +
        'or stopped), unknown (not a location this instance schedules).',
      labelNames: ['outcome'] as const,
      registers,
    }),
    webhookNudgeToPublished: new Histogram({
      name: 'calls_connector_webhook_nudge_to_published_seconds',
      help: 'From a delivery announcing a call to the commit that published the change, for announced calls.',
      buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300],
      registers,
    }),
    webhookMissedDeliveries: new Counter({
      name: 'calls_connector_webhook_missed_deliveries_total',
      help:
        'Changes published by a poll that no delivery announced within webhooks.missedGraceMs of the publish ' +
        '(a dropped delivery, or webhooks that stopped arriving).',
      registers,
    }),
  };
}

/** Sets every series to 0 so that a dashboard's rate() sees the first refusal (called when the receiver starts). */
export function primeWebhookMetrics(metrics: ReturnType<typeof webhookMetrics>): void {
  for (const outcome of WEBHOOK_DELIVERY_OUTCOMES) metrics.webhookDeliveries.inc({ outcome }, 0);
  for (const reason of WEBHOOK_CONNECTION_REFUSALS) metrics.webhookConnectionsRefused.inc({ reason }, 0);
  for (const resolution of WEBHOOK_NUDGE_RESOLUTIONS) metrics.webhookNudges.inc({ resolution }, 0);
  for (const outcome of WEBHOOK_NUDGE_OUTCOMES) metrics.webhookNudgeOutcomes.inc({ outcome }, 0);
  metrics.webhookMissedDeliveries.inc(0);
}
