/** `metrics` (the Prometheus endpoint) and `logging`. */
import { z } from 'zod';

export const metricsSchema = z
  .object({
    enabled: z.boolean().default(true),
    /** Loopback by default: /metrics and /readyz are for the local scraper; containers set 0.0.0.0. */
    host: z.string().default('127.0.0.1'),
    port: z.number().int().min(0).max(65535).default(9464),
    /** Label per-location series with the location uid; turn off for thousands of locations. */
    perLocationLabels: z.boolean().default(true),
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
