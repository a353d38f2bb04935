/**
 * The signature rule the configuration chose, as one function: Standard Webhooks (default), a configured
 * HMAC scheme, or none (development only: `webhooks.allowUnsigned`, warned about at every start).
 */
import { verifyHmac, type HmacScheme } from './hmac-scheme.js';
import { standardWebhooksKey, verifyStandardWebhooks } from './standard-webhooks.js';
import type { SignatureVerdict, SignedDelivery } from './verdict.js';

export type SignatureRule =
  | { scheme: 'standard-webhooks'; keys: readonly Uint8Array[]; toleranceMs: number }
  | { scheme: 'hmac'; hmac: HmacScheme; keys: readonly Uint8Array[]; toleranceMs: number }
  | { scheme: 'none' };

/**
 * The key bytes of each secret as the scheme reads them: Standard Webhooks decodes `whsec_<base64>`, a
 * configured HMAC uses the secret's UTF-8 bytes. Throws RangeError (naming the secret's position, never
 * its value) on a secret the scheme cannot use.
 */
export function keysOf(scheme: 'standard-webhooks' | 'hmac', secrets: readonly string[]): Uint8Array[] {
  return secrets.map((secret, i) => {
    try {
      if (scheme === 'hmac') {
        if (secret === '') throw new RangeError('a secret is empty');
        return Buffer.from(secret, 'utf8');
      }
      return standardWebhooksKey(secret);
    } catch (error) {
      throw new RangeError(`webhook secret #${i + 1}: ${(error as Error).message}`);
    }
  });
}

export function verifyDelivery(rule: SignatureRule, delivery: SignedDelivery): SignatureVerdict {
  switch (rule.scheme) {
    case 'standard-webhooks':
      return verifyStandardWebhooks(delivery, rule.keys, rule.toleranceMs);
    case 'hmac':
      return verifyHmac(rule.hmac, delivery, rule.keys, rule.toleranceMs);
    case 'none':
      return { ok: true, replayKey: null, timestampMs: null };
  }
}
