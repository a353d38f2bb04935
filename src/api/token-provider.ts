/**
 * The API client's port to whatever holds its tokens: owned here, by the client that uses it.
 *
 * Implementations: a static token (development, tests; below) and the OAuth token manager of auth/ (refresh,
 * rotation, encrypted store), which has the same shape without importing this module: the wiring
 * (runtime/steps/api.ts) hands it to the client, and the compiler checks the shapes match there. The API client
 * calls `accessToken()` before each request and, on a 401, `refreshAfterRejection(token)` once with the token
 * that was refused, then retries once.
 */
import { FatalError } from '../errors/index.js';

export interface TokenProvider {
  /** A token believed valid now. May refresh first if the current one is near expiry. */
  accessToken(signal?: AbortSignal): Promise<string>;
  /**
   * Called after the API answered 401 to `rejected`. Returns a fresh token; concurrent callers with the
   * same rejected token share one refresh (single flight). Throws a FatalError with code
   * `AUTH_GRANT_REVOKED` when the service refuses the refresh: the grant needs `auth login` again.
   */
  refreshAfterRejection(rejected: string, signal?: AbortSignal): Promise<string>;
}

/** A fixed token: no refresh possible, so a 401 is fatal for the locations using it. */
export class StaticTokenProvider implements TokenProvider {
  constructor(private readonly token: string) {
    if (token.length === 0) throw new TypeError('StaticTokenProvider needs a non-empty token');
  }
  async accessToken(): Promise<string> {
    return this.token;
  }
  async refreshAfterRejection(): Promise<string> {
    throw new FatalError(
      'AUTH_STATIC_TOKEN_REJECTED',
      'the API rejected the static token (auth.staticToken); configure `oauth` or supply a valid token',
    );
  }
}
