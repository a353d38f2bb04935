/**
 * Whether a delivery's signatures match any active key, for the schemes that sign the same way: an HMAC (a
 * configured HMAC, Standard Webhooks' `v1`) or an ed25519 signature (a configured ed25519 scheme, Standard
 * Webhooks' `v1a`). Every key is tried against every signature, so the time taken does not say which secret or
 * signature matched (HMACs compare in constant time: constant-time.ts). Pure.
 */
import { createHmac, verify, type KeyObject } from 'node:crypto';
import { sameBytes } from './constant-time.js';

/** An ed25519 signature is 64 bytes; anything else matches nothing. */
const ED25519_SIGNATURE_BYTES = 64;

export function hmacMatches(
  algorithm: 'sha256' | 'sha512' | 'sha1',
  keys: readonly Uint8Array[],
  content: Uint8Array,
  signatures: readonly Uint8Array[],
): boolean {
  let matched = false;
  for (const key of keys) {
    const expected = createHmac(algorithm, key).update(content).digest();
    for (const signature of signatures) if (sameBytes(expected, signature)) matched = true;
  }
  return matched;
}

export function ed25519Matches(
  publicKeys: readonly KeyObject[],
  content: Uint8Array,
  signatures: readonly Uint8Array[],
): boolean {
  let matched = false;
  for (const key of publicKeys)
    for (const signature of signatures)
      if (signature.length === ED25519_SIGNATURE_BYTES && verify(null, content, key, signature))
        matched = true;
  return matched;
}
