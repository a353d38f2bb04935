/**
 * A configurable HMAC signature, for an API that signs its own way (GitHub's `X-Hub-Signature-256:
 * sha256=<hex>`, Shopify's base64 over the body, schemes that sign `timestamp.body`): the header, the
 * algorithm, hex or base64, a prefix, and what is signed. The real calls API may sign any of these ways
 * (spec 6: "not shown"), so each is configuration (webhooks.signature.hmac).
 *
 * The key is the secret's UTF-8 bytes, as such schemes use it. The header may hold several signatures
 * (separated by commas or spaces) while the sender rotates; entries without the prefix are skipped
 * (so `t=…,v1=…` works with prefix `v1=`). Pure: over headers, raw body bytes, now and the keys.
 */
import { createHash, createHmac } from 'node:crypto';
import { sameBytes } from './constant-time.js';
import {
  headerValue,
  refuse,
  withinTolerance,
  type SignatureVerdict,
  type SignedDelivery,
} from './verdict.js';

export interface HmacScheme {
  /** Header that carries the signature(s), e.g. `x-hub-signature-256`. */
  header: string;
  algorithm: 'sha256' | 'sha512' | 'sha1';
  encoding: 'hex' | 'base64';
  /** Before each signature, e.g. `sha256=`; '' for none. */
  prefix: string;
  /** `body`: the raw body; `timestamp.body`: the timestamp header's value, `separator`, then the body. */
  signedContent: 'body' | 'timestamp.body';
  /** Header of the timestamp (required with `timestamp.body`; checked against the tolerance when set). */
  timestampHeader?: string | undefined;
  timestampUnit: 'seconds' | 'milliseconds';
  separator: string;
  /** Header of the delivery id (the replay window's key); absent: the signature itself is the key. */
  idHeader?: string | undefined;
}

/** The signature header's value for a delivery (the sender's side: tests and the sandbox sign with this). */
export function hmacSignature(
  scheme: HmacScheme,
  key: Uint8Array,
  body: Uint8Array,
  timestamp?: string,
): string {
  return `${scheme.prefix}${digest(scheme, key, body, timestamp).toString(scheme.encoding)}`;
}

export function verifyHmac(
  scheme: HmacScheme,
  delivery: SignedDelivery,
  keys: readonly Uint8Array[],
  toleranceMs: number,
): SignatureVerdict {
  const header = headerValue(delivery.headers, scheme.header);
  if (header === undefined) {
    return delivery.headers[scheme.header.toLowerCase()] === undefined
      ? refuse('unsigned', `no ${scheme.header} header`)
      : refuse('bad_signature', `${scheme.header} sent more than once`);
  }
  let timestamp: string | undefined;
  let timestampMs: number | null = null;
  if (scheme.timestampHeader !== undefined) {
    timestamp = headerValue(delivery.headers, scheme.timestampHeader);
    if (timestamp === undefined || !/^\d{1,15}$/.test(timestamp))
      return refuse('bad_signature', `${scheme.timestampHeader} is missing or not a number`);
    timestampMs = Number(timestamp) * (scheme.timestampUnit === 'seconds' ? 1000 : 1);
  } else if (scheme.signedContent === 'timestamp.body') {
    return refuse('bad_signature', 'the scheme signs a timestamp but names no timestamp header');
  }
  const given = header
    .split(/[\s,]+/)
    .filter((entry) => entry.startsWith(scheme.prefix) && entry.length > scheme.prefix.length)
    .map((entry) => decode(entry.slice(scheme.prefix.length), scheme.encoding));
  if (given.length === 0) return refuse('bad_signature', `no signature in ${scheme.header}`);
  let matchedSignature: Buffer | undefined;
  for (const key of keys) {
    const expected = digest(scheme, key, delivery.body, timestamp);
    for (const signature of given) if (sameBytes(expected, signature)) matchedSignature ??= expected;
  }
  if (matchedSignature === undefined) return refuse('bad_signature', 'no signature matches an active secret');
  if (timestampMs !== null && !withinTolerance(timestampMs, delivery.nowMs, toleranceMs))
    return refuse('stale_timestamp', `${scheme.timestampHeader ?? 'timestamp'} is outside the tolerance`);
  const id = scheme.idHeader === undefined ? undefined : headerValue(delivery.headers, scheme.idHeader);
  // Without an id, the signature names the delivery: a replayed request carries the same one (hashed, so the
  // window never holds a usable signature).
  const replayKey =
    id !== undefined && id !== ''
      ? `id:${id}`
      : `sig:${createHash('sha256').update(matchedSignature).digest('base64')}`;
  return { ok: true, replayKey, timestampMs };
}

function digest(scheme: HmacScheme, key: Uint8Array, body: Uint8Array, timestamp?: string): Buffer {
  const hmac = createHmac(scheme.algorithm, key);
  if (scheme.signedContent === 'timestamp.body') hmac.update(`${timestamp ?? ''}${scheme.separator}`);
  return hmac.update(body).digest();
}

/** Decoded bytes; a value that is not in the encoding decodes to something that matches nothing. */
function decode(text: string, encoding: 'hex' | 'base64'): Buffer {
  if (encoding === 'hex')
    return /^(?:[0-9a-fA-F]{2})+$/.test(text) ? Buffer.from(text, 'hex') : Buffer.alloc(0);
  return Buffer.from(text, 'base64');
}
