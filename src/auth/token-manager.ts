/**
 * The OAuth token manager of one grant: the `TokenProvider` the API client uses in production.
 *
 * - Proactive refresh: `accessToken()` refreshes when the token is within `refreshBeforeExpiryMs` of its
 *   expiry (10 hours after issue, spec 8). If that refresh fails for a retriable reason while the current
 *   token still works, the current token is returned and the next call tries again.
 * - Reactive refresh: `refreshAfterRejection(rejected)` after a 401. If the token has already changed (another
 *   caller refreshed, or another instance did and stored it), the newer token is returned without a request.
 * - Single flight: one refresh per grant at a time; every concurrent caller awaits the same promise.
 * - Rotation safety: a refresh's new token pair is written durably to the store *before* any caller receives
 *   the new access token. If that write fails, the pair is kept in memory, no one gets the token, and the
 *   next attempt retries the write before anything else (the old refresh token may already be retired).
 * - Several instances: an `invalid_grant` answer is first checked against the store: if another instance
 *   rotated the refresh token meanwhile (re-read now and once more after `rotationGraceMs`), its pair is adopted.
 * - Revocation: otherwise the grant is revoked: FatalError AUTH_GRANT_REVOKED (message: run `auth login`),
 *   `grant_valid` = 0, and every later call fails fast with the same error until a new grant is stored.
 *   Nothing here exits the process: the sync engine stops only the locations of this grant.
 *
 * Tokens never reach logs, errors or metrics.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { codeOf, ConnectorError, FatalError, RetriableError } from '../errors/index.js';
import { silentLogger, type Logger } from '../logging/logger.js';
import type { ConnectorMetrics } from '../metrics/metrics.js';
import type { GrantRecord, TokenStore } from './store/token-store.js';
import type { TokenEndpoint, TokenResponse } from './token-endpoint.js';
import { TokenRequestRefused } from './token-endpoint.js';
import type { TokenProvider } from './token-provider.js';

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

export interface TokenManagerOptions {
  grant: string;
  store: TokenStore;
  endpoint: TokenEndpoint;
  refreshBeforeExpiryMs: number;
  /** Lifetime assumed when the token response has no `expires_in` (spec: 10 hours). */
  accessTokenLifetimeMs?: number;
  /** After `invalid_grant`, how long to wait for another instance's rotated token to appear in the store. */
  rotationGraceMs?: number;
  clock?: () => number;
  metrics?: ConnectorMetrics;
  logger?: Logger;
}

export function revokedGrantMessage(grant: string): string {
  const flag = grant === 'default' ? '' : ` --grant ${grant}`;
  return (
    `the calls service refused to refresh the access token of grant "${grant}" (the grant was revoked, or its refresh ` +
    `token expired or was retired): run \`calls-connector auth login${flag}\` again to authorize the connector; ` +
    `the locations using this grant stay stopped until then`
  );
}

export class TokenManager implements TokenProvider {
  readonly grant: string;
  private readonly store: TokenStore;
  private readonly endpoint: TokenEndpoint;
  private readonly refreshBeforeExpiryMs: number;
  private readonly lifetimeMs: number;
  private readonly rotationGraceMs: number;
  private readonly now: () => number;
  private readonly metrics: ConnectorMetrics | undefined;
  private readonly log: Logger;

  private current: GrantRecord | undefined;
  private loading: Promise<GrantRecord> | undefined;
  private inflight: Promise<GrantRecord> | undefined;
  /** A refreshed pair whose durable write failed: not handed out until it is stored. */
  private unsaved: GrantRecord | undefined;
  private revoked: { refreshToken: string; error: FatalError } | undefined;

  constructor(options: TokenManagerOptions) {
    if (options.grant.length === 0) throw new TypeError('grant is required');
    if (!(options.refreshBeforeExpiryMs >= 0)) throw new RangeError('refreshBeforeExpiryMs must be >= 0');
    this.grant = options.grant;
    this.store = options.store;
    this.endpoint = options.endpoint;
    this.refreshBeforeExpiryMs = options.refreshBeforeExpiryMs;
    this.lifetimeMs = options.accessTokenLifetimeMs ?? ACCESS_TOKEN_LIFETIME_MS;
    if (this.refreshBeforeExpiryMs >= this.lifetimeMs) {
      throw new RangeError('refreshBeforeExpiryMs must be shorter than the access token lifetime');
    }
    this.rotationGraceMs = options.rotationGraceMs ?? 3_000;
    this.now = options.clock ?? Date.now;
    this.metrics = options.metrics;
    this.log = (options.logger ?? silentLogger()).child({ component: 'token-manager', grant: options.grant });
  }

  async accessToken(signal?: AbortSignal): Promise<string> {
    const record = await this.record();
    if (!this.dueForRefresh(record)) return record.accessToken;
    try {
      return (await abortable(this.refresh(record), signal)).accessToken;
    } catch (error) {
      if (error instanceof RetriableError && this.now() < record.accessTokenExpiresAt) {
        this.log.warn(
          { errorCode: error.code },
          'proactive token refresh failed; using the current token until it expires',
        );
        return record.accessToken;
      }
      throw error;
    }
  }

  async refreshAfterRejection(rejected: string, signal?: AbortSignal): Promise<string> {
    const record = await this.record();
    if (record.accessToken !== rejected) return record.accessToken;
    return (await abortable(this.refresh(record), signal)).accessToken;
  }

  /** The stored grant, loaded once; fails fast while the grant is revoked, unless a new one was stored. */
  private async record(): Promise<GrantRecord> {
    if (this.revoked !== undefined) {
      const stored = await this.store.readGrant(this.grant);
      if (stored === undefined || stored.refreshToken === this.revoked.refreshToken) throw this.revoked.error;
      this.log.info('a new grant was stored; resuming');
      this.revoked = undefined;
      this.adopt(stored);
      return stored;
    }
    if (this.current !== undefined) return this.current;
    this.loading ??= this.load().finally(() => {
      this.loading = undefined;
    });
    return this.loading;
  }

  private async load(): Promise<GrantRecord> {
    const stored = await this.store.readGrant(this.grant);
    if (stored === undefined) {
      throw new FatalError(
        'AUTH_NO_GRANT',
        `no OAuth grant "${this.grant}" is stored in ${this.store.description}: run \`calls-connector auth login\` to authorize the connector`,
        { details: { grant: this.grant } },
      );
    }
    this.adopt(stored);
    return stored;
  }

  private dueForRefresh(record: GrantRecord): boolean {
    return this.now() >= record.accessTokenExpiresAt - this.refreshBeforeExpiryMs;
  }

  /** Single flight: joins the refresh under way, or starts one from `basis`. */
  private refresh(basis: GrantRecord): Promise<GrantRecord> {
    this.inflight ??= this.refreshFrom(basis).finally(() => {
      this.inflight = undefined;
    });
    return this.inflight;
  }

  private async refreshFrom(basis: GrantRecord): Promise<GrantRecord> {
    if (this.unsaved !== undefined) return this.persistAndAdopt(this.unsaved);
    // Another instance (Kafka store) may have refreshed since we loaded: use its pair rather than ours.
    let source = (await this.store.readGrant(this.grant)) ?? basis;
    if (source.accessToken !== basis.accessToken && !this.dueForRefresh(source)) {
      this.adopt(source);
      return source;
    }
    for (let attempt = 1; ; attempt++) {
      const started = this.now();
      try {
        const response = await this.endpoint.refresh(source.refreshToken);
        const next = grantRecordFromResponse(source, response, started, this.lifetimeMs);
        const stored = await this.persistAndAdopt(next);
        this.metrics?.tokenRefreshes.inc({ grant: this.grant, result: 'success' });
        this.log.info(
          {
            expiresAt: new Date(next.accessTokenExpiresAt).toISOString(),
            refreshTokenRotated: next.refreshToken !== source.refreshToken,
          },
          'access token refreshed',
        );
        return stored;
      } catch (error) {
        if (error instanceof TokenRequestRefused && error.code === 'AUTH_INVALID_GRANT') {
          const rotated = attempt === 1 ? await this.rotatedElsewhere(source.refreshToken) : undefined;
          if (rotated !== undefined) {
            this.log.info('refresh token was rotated by another instance; using the stored pair');
            if (!this.dueForRefresh(rotated)) {
              this.adopt(rotated);
              return rotated;
            }
            source = rotated;
            continue;
          }
          throw this.markRevoked(source.refreshToken, error);
        }
        if (!(error instanceof ConnectorError && error.code === 'AUTH_STORE_WRITE_FAILED')) {
          this.metrics?.tokenRefreshes.inc({ grant: this.grant, result: 'failure' });
        }
        throw error;
      }
    }
  }

  /** Stores `next` durably, then (only then) makes it the current pair. */
  private async persistAndAdopt(next: GrantRecord): Promise<GrantRecord> {
    try {
      await this.store.writeGrant(next);
    } catch (error) {
      this.unsaved = next;
      this.metrics?.tokenRefreshes.inc({ grant: this.grant, result: 'failure' });
      this.log.error({ errorCode: codeOf(error) }, 'could not store the refreshed token pair');
      throw new RetriableError(
        'AUTH_STORE_WRITE_FAILED',
        `the refreshed tokens of grant "${this.grant}" could not be written to ${this.store.description}; they are held in memory and the write is retried before the next use`,
        { cause: error, details: { grant: this.grant } },
      );
    }
    this.unsaved = undefined;
    this.adopt(next);
    return next;
  }

  /** The stored pair if another writer replaced `used` (now, or within the grace period). */
  private async rotatedElsewhere(used: string): Promise<GrantRecord | undefined> {
    for (const wait of [0, this.rotationGraceMs]) {
      if (wait > 0) await delay(wait);
      const stored = await this.store.readGrant(this.grant);
      if (stored !== undefined && stored.refreshToken !== used) return stored;
    }
    return undefined;
  }

  private markRevoked(refreshToken: string, cause: TokenRequestRefused): FatalError {
    const error = new FatalError('AUTH_GRANT_REVOKED', revokedGrantMessage(this.grant), {
      cause,
      details: { grant: this.grant, status: cause.status },
    });
    this.revoked = { refreshToken, error };
    this.current = undefined;
    this.metrics?.tokenRefreshes.inc({ grant: this.grant, result: 'revoked' });
    this.metrics?.grantValid.set({ grant: this.grant }, 0);
    this.log.error({ errorCode: error.code }, error.message);
    return error;
  }

  private adopt(record: GrantRecord): void {
    this.current = record;
    this.metrics?.tokenExpiry.set({ grant: this.grant }, record.accessTokenExpiresAt / 1000);
    this.metrics?.grantValid.set({ grant: this.grant }, 1);
  }
}

/** Lets one waiter give up without cancelling the shared refresh the others wait on. */
function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.finally(() => signal.removeEventListener('abort', onAbort)).then(resolve, reject);
  });
}

function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error('aborted');
}
