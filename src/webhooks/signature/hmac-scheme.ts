/**
 * A configurable HMAC signature (`webhooks.signature.scheme: hmac`), for an API that signs its own way:
 * GitHub's `X-Hub-Signature-256: sha256=<hex>` over the body, Shopify's base64, Stripe's
 * `Stripe-Signature: t=…,v1=…` over `{t}.{body}`, Slack's and Zoom's `v0=` over `v0:{ts}:{body}`, Twilio's
 * base64 HMAC-SHA1 of the URL. What is signed is a template (template.ts); the header, the algorithm, hex or
 * base64 and a prefix are configuration, and the key is the secret in its configured encoding (keys.ts).
 * The real calls API may sign any of these ways (spec 6: "not shown").
 *
 * The replay key comes from signed material only: the id when the template covers it, else a digest of the
 * signed content (the same whichever of the sender's signatures or secrets matched). Pure.
 */
import { createHmac } from 'node:crypto';
import { hmacMatches } from './matching.js';
import { verifyTemplated, type TemplateScheme } from './templated-delivery.js';
import type { SignatureVerdict, SignedDelivery } from './verdict.js';

export interface HmacScheme extends TemplateScheme {
  algorithm: 'sha256' | 'sha512' | 'sha1';
}

/** The signature of `content` as the header carries it (the sender's side: tests sign with this). */
export function hmacSignatureOf(
  scheme: Pick<HmacScheme, 'algorithm' | 'encoding' | 'prefix'>,
  key: Uint8Array,
  content: Uint8Array | string,
): string {
  return `${scheme.prefix}${createHmac(scheme.algorithm, key).update(content).digest(scheme.encoding)}`;
}

/**
 * The signature header's value for a body-only or `timestamp.body` scheme (the older shapes: tests sign with
 * this); other templates sign the content they render with `hmacSignatureOf`.
 */
export function hmacSignature(
  scheme: HmacScheme,
  key: Uint8Array,
  body: Uint8Array,
  timestamp?: string,
): string {
  const head =
    scheme.signedContent === 'timestamp.body' ? `${timestamp ?? ''}${scheme.separator ?? '.'}` : '';
  return hmacSignatureOf(scheme, key, Buffer.concat([Buffer.from(head), body]));
}

export function verifyHmac(
  scheme: HmacScheme,
  delivery: SignedDelivery,
  keys: readonly Uint8Array[],
  toleranceMs: number,
): SignatureVerdict {
  return verifyTemplated(
    scheme,
    delivery,
    toleranceMs,
    (content, signatures) => hmacMatches(scheme.algorithm, keys, content, signatures),
    'secret',
  );
}
