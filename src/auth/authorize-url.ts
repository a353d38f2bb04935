/**
 * The authorization request of spec 4.1, as pure functions.
 *
 * Every query value is percent-encoded with encodeURIComponent, so the spaces between scopes become `%20`
 * (URLSearchParams would write `+`, which the spec does not allow). An http redirect_uri is refused here,
 * before anything is sent anywhere (spec 1, 5.7).
 */
import { createHash, randomBytes, randomInt } from 'node:crypto';
import { FatalError } from '../errors/index.js';

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** A fresh state: `length` characters drawn uniformly from [A-Za-z0-9] by a CSPRNG (32 chars ≈ 190 bits). */
export function newState(length = 32): string {
  if (!Number.isInteger(length) || length < 16) throw new RangeError('a state has at least 16 characters');
  let state = '';
  for (let i = 0; i < length; i++) state += ALPHANUMERIC[randomInt(ALPHANUMERIC.length)];
  return state;
}

/**
 * A fresh PKCE code verifier (RFC 7636): 32 CSPRNG bytes as base64url, 43 characters. Sent on every
 * authorization request as its S256 challenge (RFC 9700 recommends PKCE for confidential clients too):
 * a code intercepted on its way back cannot be redeemed without the verifier, which never leaves the
 * token store and the token request.
 */
export function newCodeVerifier(): string {
  return randomBytes(32).toString('base64url');
}

/** The S256 challenge of a verifier: BASE64URL(SHA256(ASCII(verifier))). */
export function codeChallengeS256(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}

export function isAlphanumericState(state: string): boolean {
  return /^[A-Za-z0-9]+$/.test(state);
}

/** Throws AUTH_REDIRECT_URI_INVALID unless `uri` is an absolute https URL without a fragment. */
export function assertHttpsRedirectUri(uri: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(uri);
  } catch (error) {
    throw new FatalError('AUTH_REDIRECT_URI_INVALID', `redirect_uri "${uri}" is not an absolute URL`, {
      cause: error,
    });
  }
  if (parsed.protocol !== 'https:') {
    throw new FatalError(
      'AUTH_REDIRECT_URI_INVALID',
      `redirect_uri must use https (spec 4.1), got ${parsed.protocol}//${parsed.host}${parsed.pathname}`,
    );
  }
  if (parsed.hash !== '')
    throw new FatalError('AUTH_REDIRECT_URI_INVALID', 'redirect_uri must not contain a fragment');
  return parsed;
}

export interface AuthorizeRequest {
  /** Base of the OAuth endpoints (no /v4), e.g. https://api.example.com */
  baseUrl: string;
  clientId: string;
  redirectUri: string;
  scopes: readonly string[];
  state: string;
  /** The PKCE S256 challenge (codeChallengeS256 of the verifier kept for the token request). */
  codeChallenge: string;
}

export function buildAuthorizeUrl(request: AuthorizeRequest): string {
  assertHttpsRedirectUri(request.redirectUri);
  if (request.scopes.length === 0) throw new RangeError('at least one scope is required');
  if (!isAlphanumericState(request.state)) throw new RangeError('the state must be alphanumeric (spec 4.1)');
  const query = [
    ['client_id', request.clientId],
    ['redirect_uri', request.redirectUri],
    ['scope', request.scopes.join(' ')],
    ['state', request.state],
    ['code_challenge', request.codeChallenge],
    ['code_challenge_method', 'S256'],
  ]
    .map(([name, value]) => `${name}=${encodeURIComponent(value ?? '')}`)
    .join('&');
  return `${oauthEndpoint(request.baseUrl, '/oauth/authorize')}?${query}`;
}

/** `{base}/oauth/...`, keeping any path prefix of the base and never doubling a slash. */
export function oauthEndpoint(baseUrl: string, path: string): string {
  return `${baseUrl.replace(/\/+$/, '')}${path}`;
}
