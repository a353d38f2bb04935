/**
 * How a configured secret becomes key material (`webhooks.signature.keyEncoding`): senders hand out secrets
 * to be used as text (GitHub, Stripe, Slack), as hex or base64 to decode first (Dixa, Sinch), or in Standard
 * Webhooks' `whsec_<base64>` form; ed25519 senders publish a public key (`whpk_<base64>`, base64 or hex of its
 * 32 bytes, or PEM). Errors never echo the secret.
 */
import { createPublicKey, type KeyObject } from 'node:crypto';

export type KeyEncoding = 'utf8' | 'hex' | 'base64' | 'standard-webhooks';

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const BASE64URL = /^[A-Za-z0-9_-]+={0,2}$/;

/** The key bytes of a shared secret. Throws RangeError (without the secret) when it is not in the encoding. */
export function secretKey(secret: string, encoding: KeyEncoding): Buffer {
  if (secret === '') throw new RangeError('a secret is empty');
  switch (encoding) {
    case 'utf8':
      return Buffer.from(secret, 'utf8');
    case 'hex':
      if (!/^(?:[0-9a-fA-F]{2})+$/.test(secret)) throw new RangeError('the secret is not hex');
      return Buffer.from(secret, 'hex');
    case 'base64':
      return base64(secret, 'the secret is not base64');
    case 'standard-webhooks': {
      const encoded = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
      const key = base64(encoded, 'a Standard Webhooks secret is whsec_ followed by base64');
      if (key.length < 16) throw new RangeError('a Standard Webhooks secret must hold at least 16 bytes');
      return key;
    }
  }
}

/** Whether a Standard Webhooks secret is a public key (`whpk_`: the asymmetric `v1a` signatures). */
export function isStandardWebhooksPublicKey(secret: string): boolean {
  return secret.startsWith('whpk_');
}

/**
 * An ed25519 public key: PEM, or its 32 raw bytes as `whpk_<base64>`, base64 or hex (`encoding` says which of
 * the last two; `utf8` and `standard-webhooks` read base64).
 */
export function ed25519PublicKey(text: string, encoding: KeyEncoding): KeyObject {
  try {
    if (text.startsWith('-----BEGIN')) {
      const key = createPublicKey(text);
      if (key.asymmetricKeyType !== 'ed25519') throw new RangeError('the PEM key is not an ed25519 key');
      return key;
    }
    const raw = text.startsWith('whpk_')
      ? base64(text.slice('whpk_'.length), 'whpk_ is followed by base64')
      : encoding === 'hex'
        ? secretKey(text, 'hex')
        : base64(text, 'the public key is not base64');
    if (raw.length !== 32) throw new RangeError('an ed25519 public key is 32 bytes');
    return createPublicKey({
      key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') },
      format: 'jwk',
    });
  } catch (error) {
    if (error instanceof RangeError) throw error;
    throw new RangeError('not an ed25519 public key');
  }
}

function base64(text: string, problem: string): Buffer {
  if (!(BASE64.test(text) || BASE64URL.test(text)) || text.replace(/=+$/, '').length % 4 === 1)
    throw new RangeError(problem);
  return Buffer.from(text, BASE64.test(text) ? 'base64' : 'base64url');
}
