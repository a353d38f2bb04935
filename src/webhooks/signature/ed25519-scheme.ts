/**
 * An ed25519 signature over a template (`webhooks.signature.scheme: ed25519`), for senders that sign with a
 * private key and publish the public one (Telnyx-like: `telnyx-signature-ed25519` in base64 over
 * `{timestamp}|{body}`). The same header, template and replay rules as hmac-scheme.ts; only the check differs.
 * Pure.
 */
import { sign, type KeyObject } from 'node:crypto';
import { ed25519Matches } from './matching.js';
import { verifyTemplated, type TemplateScheme } from './templated-delivery.js';
import type { SignatureVerdict, SignedDelivery } from './verdict.js';

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
  return verifyTemplated(
    scheme,
    delivery,
    toleranceMs,
    (content, signatures) => ed25519Matches(publicKeys, content, signatures),
    'public key',
  );
}
