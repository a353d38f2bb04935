/**
 * Durations in the configuration: every `*Ms` key takes milliseconds, or a string with a unit.
 */
import { z } from 'zod';

const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?$/;
const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/**
 * A `*Ms` key's value in milliseconds: a number, or a string with a unit (`250ms`, `60s`, `5m`, `1h`, `1d`;
 * digits alone are milliseconds, as `${ENV}` interpolation gives strings). Anything else is left for the
 * number schema to reject.
 */
export function parseDurationMs(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  const match = DURATION.exec(value.trim());
  if (match === null) return value;
  const unit = (match[2] ?? 'ms') as keyof typeof UNIT_MS;
  return Math.round(Number(match[1]) * UNIT_MS[unit]);
}

/** The schema of a `*Ms` key: a duration of at least `min` milliseconds. */
export const durationMs = (min = 0) => z.preprocess(parseDurationMs, z.number().int().min(min));
