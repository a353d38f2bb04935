/**
 * Standard Webhooks signing, the sender's side (https://www.standardwebhooks.com): `webhook-id`,
 * `webhook-timestamp` (Unix seconds) and `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`,
 * with the key the `whsec_<base64>` secret decodes to. The sandbox signs every delivery this way; the
 * connector's receiver verifies it (a workspace package shares no code with the product, hence its own copy
 * of these few lines, checked against the published test vector in the sandbox's tests).
 */
import { createHmac, randomBytes } from 'node:crypto';

/** A fresh secret in the `whsec_<base64>` form (24 random bytes). */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

/** The key bytes of a `whsec_<base64>` secret (the prefix may be left out). */
export function webhookKey(secret: string): Buffer {
  const encoded = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || encoded.length % 4 !== 0 || encoded.length < 24)
    throw new RangeError('a webhook secret is whsec_ followed by the base64 of at least 16 bytes');
  return Buffer.from(encoded, 'base64');
}

/** The three headers of a signed delivery. */
export function signatureHeaders(
  key: Uint8Array,
  id: string,
  timestampSeconds: number,
  body: string,
): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  const digest = createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': `v1,${digest}`,
  };
}
