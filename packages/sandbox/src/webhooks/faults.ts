/**
 * Faults of webhook deliveries, on demand: each a rate (a share of deliveries, drawn from a seeded generator
 * so a run repeats) or one-shot (the next delivery gets it, queued through the admin endpoint). What each does:
 * - `drop`: never sent;
 * - `duplicate`: sent twice at once, byte for byte (an at-least-once sender);
 * - `delay`: sent `delayMs` late;
 * - `reorder`: held until the next delivery was sent (or `delayMs` passed), so the later change arrives first;
 * - `badSignature`: the first attempt signed with a wrong key (retries sign correctly, as a sender would);
 * - `replay`: once accepted, the same signed request sent again `delayMs` later (an attacker's replay);
 * - `reidentify`: once accepted, the same signed request sent again `delayMs` later under a fresh id (the
 *   shape's id header, signed or not), as an attacker would to pass an id-keyed replay window.
 */
import type { Random } from '../random.js';

export const WEBHOOK_FAULTS = [
  'drop',
  'duplicate',
  'delay',
  'reorder',
  'badSignature',
  'replay',
  'reidentify',
] as const;
export type WebhookFault = (typeof WEBHOOK_FAULTS)[number];

export interface WebhookFaultSettings {
  rates: Record<WebhookFault, number>;
  /** Of `delay`, `reorder` (its longest hold) and `replay`. */
  delayMs: number;
}

export const DEFAULT_WEBHOOK_FAULTS: WebhookFaultSettings = {
  rates: { drop: 0, duplicate: 0, delay: 0, reorder: 0, badSignature: 0, replay: 0, reidentify: 0 },
  delayMs: 500,
};

export function mergeWebhookFaults(
  current: WebhookFaultSettings,
  change: { rates?: Partial<Record<WebhookFault, number>>; delayMs?: number },
): WebhookFaultSettings {
  const rates = { ...current.rates, ...change.rates };
  for (const [name, value] of Object.entries(rates))
    if (!(value >= 0 && value <= 1)) throw new RangeError(`webhook fault rate ${name} must be from 0 to 1`);
  const delayMs = change.delayMs ?? current.delayMs;
  if (!(Number.isFinite(delayMs) && delayMs >= 0)) throw new RangeError('webhook fault delayMs must be >= 0');
  return { rates, delayMs };
}

/**
 * The faults of the next delivery: every queued one-shot fault (consumed), plus each rate's draw. Pure
 * but for the generator and the queue it is given.
 */
export function drawFaults(
  settings: WebhookFaultSettings,
  once: WebhookFault[],
  random: Random,
): Set<WebhookFault> {
  const faults = new Set<WebhookFault>(once.splice(0));
  for (const fault of WEBHOOK_FAULTS) if (random.chance(settings.rates[fault])) faults.add(fault);
  return faults;
}
