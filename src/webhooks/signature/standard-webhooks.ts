/**
 * Standard Webhooks (https://www.standardwebhooks.com, the scheme Svix and others send), the default because
 * the calls API's spec shows no signature rules (spec 6: "not shown"):
 *
 * - `webhook-id`: the delivery's id (the same on every retry of one event: the replay window's key);
 * - `webhook-timestamp`: Unix seconds;
 * - `webhook-signature`: space-separated `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, several while a
 *   secret is rotated (one per active secret of the sender);
 * - secrets in the form `whsec_<base64 key bytes>`;
 * - asymmetric signatures `v1a,<base64 ed25519 signature>` over the same content, verified with the sender's
 *   public key `whpk_<base64>` (the spec's `v1a`);
 * - Svix-branded senders (Clerk and others) send the same headers named `svix-id`, `svix-timestamp`,
 *   `svix-signature` (`headerPrefix: svix`).
 *
 * Pure: over the headers, the raw body bytes, now and the keys. The signature is checked before the
 * timestamp, so `stale_timestamp` always means an authentic delivery that is too old (or too far ahead).
 */
import { createHmac, sign, type KeyObject } from 'node:crypto';
import { ed25519Matches, hmacMatches } from './matching.js';
import { secretKey } from './keys.js';
import {
  headerValue,
  refuse,
  withinTolerance,
  type SignatureVerdict,
  type SignedDelivery,
} from './verdict.js';

/** The names of the three headers: `webhook-*` (the spec) or `svix-*` (Svix-branded senders). */
export type StandardWebhooksHeaders = 'webhook' | 'svix';

export interface StandardWebhooksOptions {
  headerPrefix?: StandardWebhooksHeaders;
  /** The sender's ed25519 public keys, for `v1a` signatures. */
  publicKeys?: readonly KeyObject[];
}

/**
 * The key bytes of a Standard Webhooks secret: `whsec_<base64>` (the prefix may be left out). Throws
 * RangeError, without echoing the secret, when the rest is not base64 or too short to be a key.
 */
export function standardWebhooksKey(secret: string): Buffer {
  return secretKey(secret, 'standard-webhooks');
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

/** The `v1a,<base64>` signature of a delivery with an ed25519 private key (the sender's side). */
export function standardWebhooksAsymmetricSignature(
  privateKey: KeyObject,
  id: string,
  timestampSeconds: number,
  body: Uint8Array,
): string {
  const content = Buffer.concat([Buffer.from(`${id}.${timestampSeconds}.`), body]);
  return `v1a,${signEd25519(privateKey, content).toString('base64')}`;
}

export function verifyStandardWebhooks(
  delivery: SignedDelivery,
  keys: readonly Uint8Array[],
  toleranceMs: number,
  options: StandardWebhooksOptions = {},
): SignatureVerdict {
  const prefix = options.headerPrefix ?? 'webhook';
  const signatureHeader = `${prefix}-signature`;
  const signatures = headerValue(delivery.headers, signatureHeader);
  if (signatures === undefined) {
    return delivery.headers[signatureHeader] === undefined
      ? refuse('unsigned', `no ${signatureHeader} header`)
      : refuse('bad_signature', `${signatureHeader} sent more than once`);
  }
  const id = headerValue(delivery.headers, `${prefix}-id`);
  const timestamp = headerValue(delivery.headers, `${prefix}-timestamp`);
  if (id === undefined || id === '' || timestamp === undefined)
    return refuse('bad_signature', `${signatureHeader} without ${prefix}-id and ${prefix}-timestamp`);
  if (!/^\d{1,12}$/.test(timestamp))
    return refuse('bad_signature', `${prefix}-timestamp is not Unix seconds`);
  const entries = signatures.split(' ');
  const symmetric = decoded(entries, 'v1,');
  const asymmetric = decoded(entries, 'v1a,').filter((signature) => signature.length === 64);
  if (symmetric.length === 0 && asymmetric.length === 0)
    return refuse('bad_signature', `no v1 or v1a signature in ${signatureHeader}`);
  const content = Buffer.concat([Buffer.from(`${id}.${timestamp}.`), delivery.body]);
  // Both checks run, so the time taken does not say which kind of signature matched.
  const symmetricMatch = hmacMatches('sha256', keys, content, symmetric);
  const asymmetricMatch = ed25519Matches(options.publicKeys ?? [], content, asymmetric);
  if (!symmetricMatch && !asymmetricMatch)
    return refuse('bad_signature', 'no signature matches an active secret');
  const timestampMs = Number(timestamp) * 1000;
  if (!withinTolerance(timestampMs, delivery.nowMs, toleranceMs))
    return refuse('stale_timestamp', `${prefix}-timestamp is outside the tolerance`);
  return { ok: true, replayKey: `id:${id}`, timestampMs };
}

function decoded(entries: readonly string[], version: string): Buffer[] {
  return entries
    .filter((entry) => entry.startsWith(version))
    .map((entry) => Buffer.from(entry.slice(version.length), 'base64'));
}

function signEd25519(privateKey: KeyObject, content: Buffer): Buffer {
  return sign(null, content, privateKey);
}

function signedDigest(key: Uint8Array, id: string, timestamp: string, body: Uint8Array): Buffer {
  return createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();
}
