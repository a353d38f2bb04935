/** `metrics` (the Prometheus endpoint) and `logging`. */
import { z } from 'zod';
import { durationMs } from '../duration.js';

export const metricsSchema = z
  .object({
    enabled: z.boolean().default(true),
    /** Loopback by default: /metrics and /readyz are for the local scraper; containers set 0.0.0.0. */
    host: z.string().default('127.0.0.1'),
    port: z.number().int().min(0).max(65535).default(9464),
    /** Label per-location series with the location uid; turn off for thousands of locations. */
    perLocationLabels: z.boolean().default(true),
    /**
     * The freshness objective: the 99th percentile of the delay from a change's updatedAt to its commit (live
     * lane) that the alert CallsConnectorFreshnessObjectiveMissed holds the connector to. Unset: twice the live
     * poll interval (freshnessObjectiveMs below), the promise of one interval with one more as slack.
     */
    freshnessObjectiveMs: durationMs(1_000).optional(),
  })
  .strict()
  .prefault({});

export const loggingSchema = z
  .object({
    level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace']).default('info'),
    /** auto: human-readable when stdout is a terminal, JSON otherwise. */
    format: z.enum(['auto', 'json', 'pretty']).default('auto'),
  })
  .strict()
  .prefault({});

/**
 * * The freshness objective in force (ms): `metrics.freshnessObjectiveMs`, or when unset twice `livePollIntervalMs`
 * (the interval a change waits at most for its poll, webhooks.ts livePollIntervalMs).
 */
export function freshnessObjectiveMs(
  metrics: Pick<z.infer<typeof metricsSchema>, 'freshnessObjectiveMs'>,
  livePollIntervalMs: number,
): number {
  return metrics.freshnessObjectiveMs ?? 2 * livePollIntervalMs;
}
