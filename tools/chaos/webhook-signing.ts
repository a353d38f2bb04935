/**
 * Standard Webhooks signing as the chaos driver does it, on its own (tools/chaos shares no code with the
 * connector): `webhook-id`, `webhook-timestamp` (Unix seconds), `webhook-signature: v1,<base64 HMAC-SHA256 of
 * "id.timestamp.body">` with the key a `whsec_<base64>` secret decodes to. The driver holds the run's secret
 * (it gives it to the sandbox and to the connector), so it can tell a genuine delivery from a forged one
 * independently of the receiver, and play the attacker who has none. Pure.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** A fresh `whsec_<base64>` secret (24 random bytes). */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

function keyOf(secret: string): Buffer {
  return Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
}

/** The three signature headers of `body` under `secret` (header names in lower case). */
export function signDelivery(
  secret: string,
  id: string,
  timestampSeconds: number,
  body: string,
): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  const digest = createHmac('sha256', keyOf(secret)).update(`${id}.${timestampSeconds}.${body}`).digest();
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': `v1,${digest.toString('base64')}`,
  };
}

/**
 * Whether a request carries a valid signature of `secret` over its id, timestamp and body (any of the
 * space-separated `v1,` signatures). The timestamp's age is not judged here: a replay of a genuine delivery is
 * validly signed, and what the receiver must make of it is the judge's rule (webhook-judge.ts).
 */
export function validSignature(
  secret: string,
  headers: Readonly<Record<string, string | undefined>>,
  body: string,
): boolean {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (id === undefined || timestamp === undefined || signatures === undefined) return false;
  const expected = createHmac('sha256', keyOf(secret)).update(`${id}.${timestamp}.${body}`).digest();
  return signatures.split(' ').some((entry) => {
    if (!entry.startsWith('v1,')) return false;
    const given = Buffer.from(entry.slice(3), 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}
