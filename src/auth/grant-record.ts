/**
 * The grant record a token response makes: the authorization flow's first pair (authorization.ts) and every
 * refresh's (token-manager.ts).
 */
import { FatalError } from '../errors/index.js';
import type { GrantRecord } from './store/token-store.js';
import type { TokenResponse } from './token-endpoint.js';

/** Lifetime assumed for an access token whose response has no `expires_in` (spec 8: 10 hours). */
export const ACCESS_TOKEN_LIFETIME_MS = 10 * 3600_000;

/**
 * The grant record a token response produces. `started` is when the request was sent (so the expiry errs
 * early); the refresh token and scopes carry over from `previous` when the response omits them.
 */
export function grantRecordFromResponse(
  previous: Pick<GrantRecord, 'grant' | 'clientId' | 'scopes'> & { refreshToken?: string | undefined },
  response: TokenResponse,
  started: number,
  lifetimeMs: number,
): GrantRecord {
  const refreshToken = response.refreshToken ?? previous.refreshToken;
  if (refreshToken === undefined) {
    throw new FatalError(
      'AUTH_TOKEN_RESPONSE_INVALID',
      'the token endpoint sent no refresh_token; the connector cannot keep the grant alive',
    );
  }
  const expiresInMs =
    response.expiresInSeconds === undefined
      ? lifetimeMs
      : Math.min(lifetimeMs, response.expiresInSeconds * 1000);
  return {
    grant: previous.grant,
    clientId: previous.clientId,
    accessToken: response.accessToken,
    refreshToken,
    accessTokenExpiresAt: started + expiresInMs,
    obtainedAt: started,
    scopes: response.scope === undefined ? previous.scopes : response.scope.split(' ').filter(Boolean),
  };
}
