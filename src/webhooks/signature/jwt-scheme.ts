/**
 * A delivery authenticated by a JWT signed HS256 with the shared secret (`webhooks.signature.scheme: jwt`):
 * - `location: body`: the whole body is the compact JWT and its claims are the event (Dialpad, when a secret
 *   is set): the payload mapping then reads the claims;
 * - `location: header`: a header carries the JWT (Vonage: `Authorization: Bearer <jwt>`) and the body stays
 *   JSON; a claim (Vonage's `payload_hash`) holds the hex SHA-256 of the body, so the body is signed too.
 *
 * Checked with `jose` (HS256 only, never `none` or another algorithm): the signature first, then `exp` (with
 * the tolerance as clock skew), `iat` within the tolerance of now (the signed timestamp; a token without one
 * is refused unless replay protection is waived), and the body hash. The replay key is the `idClaim` (`jti`)
 * when the token has one, else a digest of the signed token. Asynchronous (jose's verification is).
 */
import { createHash, createSecretKey, type KeyObject } from 'node:crypto';
import { errors, jwtVerify, type JWTPayload } from 'jose';
import { sameBytes } from './constant-time.js';
import {
  headerValue,
  refuse,
  signedContentKey,
  withinTolerance,
  type SignatureVerdict,
  type SignedDelivery,
} from './verdict.js';

export interface JwtScheme {
  location: 'body' | 'header';
  /** With `location: header`: the header (lower case), e.g. `authorization`. */
  header: string;
  /** Before the token in the header, e.g. `Bearer ` (matched without regard to case). */
  prefix: string;
  /** The claim holding the hex SHA-256 of the raw body (required with `location: header`). */
  payloadHashClaim?: string | undefined;
  /** The claim naming the delivery (signed, so it may key the replay window). */
  idClaim: string;
  /** Whether a token without `iat` is accepted (only when replay protection is waived). */
  requireIssuedAt: boolean;
}

export async function verifyJwt(
  scheme: JwtScheme,
  delivery: SignedDelivery,
  keys: readonly Uint8Array[],
  toleranceMs: number,
): Promise<SignatureVerdict> {
  const token = tokenOf(scheme, delivery);
  if (token === undefined) return refuse('unsigned', `no JWT in the ${scheme.location}`);
  if (!/^[\w-]+\.[\w-]+\.[\w-]+$/.test(token)) return refuse('bad_signature', 'not a compact JWT');
  let claims: JWTPayload | undefined;
  for (const key of keys) {
    try {
      ({ payload: claims } = await jwtVerify(token, secretKeyOf(key), {
        algorithms: ['HS256'],
        currentDate: new Date(delivery.nowMs),
        clockTolerance: Math.floor(toleranceMs / 1000),
      }));
      break;
    } catch (error) {
      // Claims are checked only once the signature matched: an expired token is authentic but stale.
      if (error instanceof errors.JWTExpired) return refuse('stale_timestamp', 'the JWT has expired');
      if (error instanceof errors.JWTClaimValidationFailed)
        return refuse('bad_signature', `the JWT's ${error.claim} claim is invalid`);
    }
  }
  if (claims === undefined) return refuse('bad_signature', 'no JWT signature matches an active secret');
  let timestampMs: number | null = null;
  if (typeof claims.iat === 'number') {
    timestampMs = claims.iat * 1000;
    if (!withinTolerance(timestampMs, delivery.nowMs, toleranceMs))
      return refuse('stale_timestamp', 'the JWT was issued outside the tolerance');
  } else if (scheme.requireIssuedAt) {
    return refuse('bad_signature', 'the JWT has no iat claim (its age cannot be known)');
  }
  if (scheme.payloadHashClaim !== undefined) {
    const declared = claims[scheme.payloadHashClaim];
    const actual = createHash('sha256').update(delivery.body).digest();
    const given =
      typeof declared === 'string' && /^[0-9a-fA-F]{64}$/.test(declared)
        ? Buffer.from(declared, 'hex')
        : Buffer.alloc(0);
    if (!sameBytes(actual, given))
      return refuse('bad_signature', `the body does not match the JWT's ${scheme.payloadHashClaim} claim`);
  }
  const id = claims[scheme.idClaim];
  const replayKey =
    typeof id === 'string' && id !== ''
      ? `id:${id}`
      : signedContentKey(token.slice(0, token.lastIndexOf('.')));
  return scheme.location === 'body'
    ? { ok: true, replayKey, timestampMs, payload: Buffer.from(JSON.stringify(claims)) }
    : { ok: true, replayKey, timestampMs };
}

/** Each secret's key object, made once (jose would import a raw key anew on every delivery). */
const keyObjects = new WeakMap<Uint8Array, KeyObject>();
function secretKeyOf(key: Uint8Array): KeyObject {
  let object = keyObjects.get(key);
  if (object === undefined) {
    object = createSecretKey(key);
    keyObjects.set(key, object);
  }
  return object;
}

function tokenOf(scheme: JwtScheme, delivery: SignedDelivery): string | undefined {
  if (scheme.location === 'body') {
    const text = Buffer.from(delivery.body).toString('utf8').trim();
    return text === '' ? undefined : text;
  }
  const value = headerValue(delivery.headers, scheme.header);
  if (value === undefined) return undefined;
  if (!value.toLowerCase().startsWith(scheme.prefix.toLowerCase())) return '';
  return value.slice(scheme.prefix.length).trim();
}
