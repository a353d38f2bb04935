/**
 * A shared token instead of a signature (`webhooks.signature.scheme: token`): the sender puts a secret it
 * shares with us in a header (RingCentral's `Verification-Token`) or in a field of the JSON body (Aircall's
 * `token`). Nothing is signed: the token proves only that the sender knows it, so a captured delivery can be
 * replayed, or its body changed, by whoever captured it. Accepted only with replay protection waived
 * (the configuration says why); the replay key is a digest of the body, remembered while the window holds it.
 *
 * Compared in constant time over SHA-256 digests, so neither the token's length nor a matching prefix shows in
 * the time taken. Pure.
 */
import { createHash } from 'node:crypto';
import { readPath } from '../../json/dotted-path.js';
import { parseJsonObject } from '../../json/json-object.js';
import { sameBytes } from './constant-time.js';
import {
  headerValue,
  refuse,
  signedContentKey,
  type SignatureVerdict,
  type SignedDelivery,
} from './verdict.js';

export interface TokenScheme {
  location: 'header' | 'body';
  /** With `location: header`: the header (lower case). */
  header: string;
  /** With `location: body`: the dotted path of the field, e.g. `token`. */
  field: string;
}

export function verifyToken(
  scheme: TokenScheme,
  delivery: SignedDelivery,
  keys: readonly Uint8Array[],
): SignatureVerdict {
  const given =
    scheme.location === 'header'
      ? headerValue(delivery.headers, scheme.header)
      : fieldOf(scheme.field, delivery.body);
  if (given === undefined || given === '') return refuse('unsigned', `no token in the ${scheme.location}`);
  const digest = sha256(Buffer.from(given, 'utf8'));
  let matched = false;
  for (const key of keys) if (sameBytes(sha256(key), digest)) matched = true;
  if (!matched) return refuse('bad_signature', 'the token matches no active secret');
  return { ok: true, replayKey: signedContentKey(delivery.body), timestampMs: null };
}

function fieldOf(path: string, body: Uint8Array): string | undefined {
  const value = readPath(parseJsonObject(Buffer.from(body).toString('utf8')), path);
  return typeof value === 'string' ? value : undefined;
}

function sha256(bytes: Uint8Array): Buffer {
  return createHash('sha256').update(bytes).digest();
}
