/**
 * The signature rule the configuration chose, as one function: Standard Webhooks (default), an HMAC or
 * ed25519 signature over a template, a JWT, a shared token, or none (development only:
 * `webhooks.allowUnsigned`, warned about at every start); and the registration handshake it answers.
 */
import type { KeyObject } from 'node:crypto';
import {
  challengeAfterSignature,
  challengeBeforeSignature,
  type Challenge,
  type ChallengeAnswer,
} from './challenge.js';
import { verifyEd25519, type Ed25519Scheme } from './ed25519-scheme.js';
import { verifyHmac, type HmacScheme } from './hmac-scheme.js';
import { verifyJwt, type JwtScheme } from './jwt-scheme.js';
import { ed25519PublicKey, isStandardWebhooksPublicKey, secretKey, type KeyEncoding } from './keys.js';
import { verifyStandardWebhooks, type StandardWebhooksHeaders } from './standard-webhooks.js';
import { verifyToken, type TokenScheme } from './token-scheme.js';
import type { DeliveryHeaders, SignatureVerdict, SignedDelivery } from './verdict.js';

interface Common {
  toleranceMs: number;
  /** A registration handshake answered (absent: none). */
  challenge?: Challenge;
}

/**
 * What a rule is made of: the `webhooks.signature` section as config/sections/webhooks.ts validates it (its
 * secrets come apart, from the environment and files: signature-secrets.ts).
 */
export interface SignatureSettings {
  scheme: 'standard-webhooks' | 'hmac' | 'ed25519' | 'jwt' | 'token';
  /** How a secret becomes key material; absent: the scheme's own default. */
  keyEncoding?: KeyEncoding | undefined;
  toleranceMs: number;
  /** The origin the sender posts to, for a signed `{url}`. */
  publicUrl?: string | undefined;
  standardWebhooks: { headerPrefix: StandardWebhooksHeaders };
  hmac: Omit<HmacScheme, 'publicUrl'>;
  ed25519: Omit<Ed25519Scheme, 'publicUrl'>;
  jwt: Omit<JwtScheme, 'requireIssuedAt'>;
  token: TokenScheme;
  challenge: Challenge;
}

export type SignatureRule =
  | (Common & {
      scheme: 'standard-webhooks';
      keys: readonly Uint8Array[];
      /** ed25519 public keys (`whpk_`), for `v1a` signatures. */
      publicKeys?: readonly KeyObject[];
      headerPrefix?: StandardWebhooksHeaders;
    })
  | (Common & { scheme: 'hmac'; hmac: HmacScheme; keys: readonly Uint8Array[] })
  | (Common & { scheme: 'ed25519'; ed25519: Ed25519Scheme; publicKeys: readonly KeyObject[] })
  | (Common & { scheme: 'jwt'; jwt: JwtScheme; keys: readonly Uint8Array[] })
  | (Common & { scheme: 'token'; token: TokenScheme; keys: readonly Uint8Array[] })
  | { scheme: 'none' };

/**
 * The key bytes of each secret as the scheme reads them: Standard Webhooks decodes `whsec_<base64>`, a
 * configured HMAC uses the secret's UTF-8 bytes. Throws RangeError (naming the secret's position, never
 * its value) on a secret the scheme cannot use.
 */
export function keysOf(scheme: 'standard-webhooks' | 'hmac', secrets: readonly string[]): Uint8Array[] {
  return secrets.map((secret, i) =>
    numbered(i, () => secretKey(secret, scheme === 'hmac' ? 'utf8' : 'standard-webhooks')),
  );
}

/**
 * The rule of a `webhooks.signature` section with its secrets (from the environment and files). Throws
 * RangeError naming a secret by its position, never its value, when the scheme cannot use it.
 * `replayWaived`: a JWT without `iat` is then accepted.
 */
export function signatureRuleOf(
  signature: SignatureSettings,
  secrets: readonly string[],
  replayWaived: boolean,
): SignatureRule {
  const { toleranceMs, challenge } = signature;
  const encoding: KeyEncoding =
    signature.keyEncoding ??
    (signature.scheme === 'standard-webhooks'
      ? 'standard-webhooks'
      : signature.scheme === 'ed25519'
        ? 'base64'
        : 'utf8');
  const shared = (): Uint8Array[] => secrets.map((s, i) => numbered(i, () => secretKey(s, encoding)));
  const common = { toleranceMs, challenge };
  switch (signature.scheme) {
    case 'standard-webhooks': {
      const keys: Uint8Array[] = [];
      const publicKeys: KeyObject[] = [];
      secrets.forEach((s, i) =>
        numbered(i, () => {
          if (isStandardWebhooksPublicKey(s)) publicKeys.push(ed25519PublicKey(s, 'base64'));
          else keys.push(secretKey(s, encoding));
        }),
      );
      return {
        ...common,
        scheme: 'standard-webhooks',
        keys,
        publicKeys,
        headerPrefix: signature.standardWebhooks.headerPrefix,
      };
    }
    case 'hmac':
      return {
        ...common,
        scheme: 'hmac',
        hmac: { ...signature.hmac, publicUrl: signature.publicUrl },
        keys: shared(),
      };
    case 'ed25519':
      return {
        ...common,
        scheme: 'ed25519',
        ed25519: { ...signature.ed25519, publicUrl: signature.publicUrl },
        publicKeys: secrets.map((s, i) => numbered(i, () => ed25519PublicKey(s, encoding))),
      };
    case 'jwt':
      return {
        ...common,
        scheme: 'jwt',
        jwt: { ...signature.jwt, requireIssuedAt: !replayWaived },
        keys: shared(),
      };
    case 'token':
      return { ...common, scheme: 'token', token: signature.token, keys: shared() };
  }
}

/** The verdict on one delivery (a promise for `jwt`, whose library verifies asynchronously). */
export function verifyDelivery(
  rule: SignatureRule,
  delivery: SignedDelivery,
): SignatureVerdict | Promise<SignatureVerdict> {
  switch (rule.scheme) {
    case 'standard-webhooks':
      return verifyStandardWebhooks(delivery, rule.keys, rule.toleranceMs, {
        headerPrefix: rule.headerPrefix ?? 'webhook',
        publicKeys: rule.publicKeys ?? [],
      });
    case 'hmac':
      return verifyHmac(rule.hmac, delivery, rule.keys, rule.toleranceMs);
    case 'ed25519':
      return verifyEd25519(rule.ed25519, delivery, rule.publicKeys, rule.toleranceMs);
    case 'jwt':
      return verifyJwt(rule.jwt, delivery, rule.keys, rule.toleranceMs);
    case 'token':
      return verifyToken(rule.token, delivery, rule.keys);
    case 'none':
      return { ok: true, replayKey: null, timestampMs: null };
  }
}

/** Whether deliveries are JSON (else the body is a JWT: any content type is read). */
export function expectsJsonBody(rule: SignatureRule): boolean {
  return !(rule.scheme === 'jwt' && rule.jwt.location === 'body');
}

/** The answer to an unsigned registration handshake (RingCentral's), or null: the receiver asks first. */
export function handshakeBeforeSignature(
  rule: SignatureRule,
  headers: DeliveryHeaders,
): ChallengeAnswer | null {
  return rule.scheme === 'none' ? null : challengeBeforeSignature(rule.challenge ?? 'none', headers);
}

/** The answer to a signed registration handshake (Slack's, Zoom's) once verified, or null. */
export function handshakeAfterSignature(rule: SignatureRule, payload: Uint8Array): ChallengeAnswer | null {
  if (rule.scheme === 'none') return null;
  const key = 'keys' in rule ? rule.keys[0] : undefined;
  return challengeAfterSignature(rule.challenge ?? 'none', payload, key);
}

function numbered<T>(i: number, make: () => T): T {
  try {
    return make();
  } catch (error) {
    throw new RangeError(`webhook secret #${i + 1}: ${(error as Error).message}`);
  }
}
