/**
 * Standard Webhooks (https://www.standardwebhooks.com, the scheme Svix and others send), the default because
 * the calls API's spec shows no signature rules (spec 6: "not shown"):
 *
 * - `webhook-id`: the delivery's id (the same on every retry of one event: the replay window's key);
 * - `webhook-timestamp`: Unix seconds;
 * - `webhook-signature`: space-separated `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, several while a
 *   secret is rotated (one per active secret of the sender);
 * - secrets in the form `whsec_<base64 key bytes>`.
 *
 * Pure: over the headers, the raw body bytes, now and the keys. The signature is checked before the
 * timestamp, so `stale_timestamp` always means an authentic delivery that is too old (or too far ahead).
 */
import { createHmac } from 'node:crypto';
import { sameBytes } from './constant-time.js';
import {
  headerValue,
  refuse,
  withinTolerance,
  type SignatureVerdict,
  type SignedDelivery,
} from './verdict.js';

const SECRET_PREFIX = 'whsec_';
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * The key bytes of a Standard Webhooks secret: `whsec_<base64>` (the prefix may be left out). Throws
 * RangeError, without echoing the secret, when the rest is not base64 or too short to be a key.
 */
export function standardWebhooksKey(secret: string): Buffer {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  if (!BASE64.test(encoded) || encoded.length % 4 !== 0)
    throw new RangeError('a Standard Webhooks secret is whsec_ followed by base64');
  const key = Buffer.from(encoded, 'base64');
  if (key.length < 16) throw new RangeError('a Standard Webhooks secret must hold at least 16 bytes');
  return key;
}

/** The `v1,<base64>` signature of a delivery (the sender's side: the sandbox signs with this). */
export function standardWebhooksSignature(
  key: Uint8Array,
  id: string,
  timestampSeconds: number,
  body: Uint8Array,
): string {
  return `v1,${signedDigest(key, id, String(timestampSeconds), body).toString('base64')}`;
}

export function verifyStandardWebhooks(
  delivery: SignedDelivery,
  keys: readonly Uint8Array[],
  toleranceMs: number,
): SignatureVerdict {
  const signatures = headerValue(delivery.headers, 'webhook-signature');
  if (signatures === undefined) {
    return delivery.headers['webhook-signature'] === undefined
      ? refuse('unsigned', 'no webhook-signature header')
      : refuse('bad_signature', 'webhook-signature sent more than once');
  }
  const id = headerValue(delivery.headers, 'webhook-id');
  const timestamp = headerValue(delivery.headers, 'webhook-timestamp');
  if (id === undefined || id === '' || timestamp === undefined)
    return refuse('bad_signature', 'webhook-signature without webhook-id and webhook-timestamp');
  if (!/^\d{1,12}$/.test(timestamp)) return refuse('bad_signature', 'webhook-timestamp is not Unix seconds');
  const given = signatures
    .split(' ')
    .filter((entry) => entry.startsWith('v1,'))
    .map((entry) => Buffer.from(entry.slice(3), 'base64'));
  if (given.length === 0) return refuse('bad_signature', 'no v1 signature in webhook-signature');
  const matched = keys.some((key) => {
    const expected = signedDigest(key, id, timestamp, delivery.body);
    // Every pair is compared, so the time taken does not say which secret or signature matched.
    return given.map((signature) => sameBytes(expected, signature)).includes(true);
  });
  if (!matched) return refuse('bad_signature', 'no signature matches an active secret');
  const timestampMs = Number(timestamp) * 1000;
  if (!withinTolerance(timestampMs, delivery.nowMs, toleranceMs))
    return refuse('stale_timestamp', 'webhook-timestamp is outside the tolerance');
  return { ok: true, replayKey: `id:${id}`, timestampMs };
}

function signedDigest(key: Uint8Array, id: string, timestamp: string, body: Uint8Array): Buffer {
  return createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();
}
