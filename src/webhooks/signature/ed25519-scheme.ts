/**
 * An ed25519 signature over a template (`webhooks.signature.scheme: ed25519`), for senders that sign with a
 * private key and publish the public one (Telnyx-like: `telnyx-signature-ed25519` in base64 over
 * `{timestamp}|{body}`). The same header, template and replay rules as hmac-scheme.ts; only the check differs.
 * Pure.
 */
import { sign, verify, type KeyObject } from 'node:crypto';
import { readTemplated, type TemplateScheme } from './templated-delivery.js';
import {
  refuse,
  signedContentKey,
  withinTolerance,
  type SignatureVerdict,
  type SignedDelivery,
} from './verdict.js';

export type Ed25519Scheme = TemplateScheme;

/** The signature of `content` as the header carries it (the sender's side: tests sign with this). */
export function ed25519SignatureOf(
  scheme: Pick<Ed25519Scheme, 'encoding' | 'prefix'>,
  privateKey: KeyObject,
  content: Uint8Array | string,
): string {
  return `${scheme.prefix}${sign(null, Buffer.from(content), privateKey).toString(scheme.encoding)}`;
}

export function verifyEd25519(
  scheme: Ed25519Scheme,
  delivery: SignedDelivery,
  publicKeys: readonly KeyObject[],
  toleranceMs: number,
): SignatureVerdict {
  const read = readTemplated(scheme, delivery);
  if ('ok' in read) return read;
  let matched = false;
  for (const key of publicKeys)
    for (const signature of read.signatures)
      if (signature.length === 64 && verify(null, read.content, key, signature)) matched = true;
  if (!matched) return refuse('bad_signature', 'no signature matches an active public key');
  if (read.timestampMs !== null && !withinTolerance(read.timestampMs, delivery.nowMs, toleranceMs))
    return refuse('stale_timestamp', 'the signed timestamp is outside the tolerance');
  const replayKey = read.signedId !== undefined ? `id:${read.signedId}` : signedContentKey(read.content);
  return { ok: true, replayKey, timestampMs: read.timestampMs };
}
