/**
 * What a grant's failures tell the operator: each error of the token manager with its stable code, named by
 * what happens next (fatal: `auth login` is needed; retriable: the manager tries again by itself), and the fix.
 * Tokens never appear in them: only the grant's name and the store's description.
 */
import { FatalError, RetriableError } from '../errors/index.js';
import type { TokenRequestRefused } from './token-endpoint.js';

export function revokedGrantMessage(grant: string): string {
  const flag = grant === 'default' ? '' : ` --grant ${grant}`;
  return (
    `the calls service refused to refresh the access token of grant "${grant}" (the grant was revoked, or its refresh ` +
    `token expired or was retired): run \`calls-connector auth login${flag}\` again to authorize the connector; ` +
    `the locations using this grant stay stopped until then`
  );
}

/** The refresh token was refused and the access token cannot be used any more: `auth login` again. */
export function grantRevoked(grant: string, cause: TokenRequestRefused): FatalError {
  return new FatalError('AUTH_GRANT_REVOKED', revokedGrantMessage(grant), {
    cause,
    details: { grant, status: cause.status },
  });
}

/** No grant of that name in the store: it was never authorized. */
export function noGrantStored(grant: string, storeDescription: string): FatalError {
  return new FatalError(
    'AUTH_NO_GRANT',
    `no OAuth grant "${grant}" is stored in ${storeDescription}: run \`calls-connector auth login\` to authorize the connector`,
    { details: { grant } },
  );
}

/** The refreshed pair could not be stored: held in memory, written again before it is used. */
export function storeWriteFailed(grant: string, storeDescription: string, cause: unknown): RetriableError {
  return new RetriableError(
    'AUTH_STORE_WRITE_FAILED',
    `the refreshed tokens of grant "${grant}" could not be written to ${storeDescription}; they are held in memory and the write is retried before the next use`,
    { cause, details: { grant } },
  );
}

/** The refresh token was refused while the access token still works, until `expiresAt`: the store is re-read. */
export function refreshRefused(grant: string, expiresAt: number, cause: TokenRequestRefused): RetriableError {
  return new RetriableError(
    'AUTH_REFRESH_REFUSED',
    `the token endpoint refused the refresh token of grant "${grant}" (invalid_grant); the current access token is used until ${new Date(expiresAt).toISOString()} while the token store is re-read`,
    { cause, details: { grant } },
  );
}

/** The API rejects a token a refresh just produced: refreshed again after `retryInMs`, not at once. */
export function rejectedAfterRefresh(grant: string, retryInMs: number): RetriableError {
  return new RetriableError(
    'AUTH_TOKEN_REJECTED_AFTER_REFRESH',
    `the calls API rejects the access token of grant "${grant}" although it was just refreshed; refreshing again in ${retryInMs} ms`,
    { details: { grant } },
  );
}
