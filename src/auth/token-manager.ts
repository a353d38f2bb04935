/**
 * The OAuth token manager of one grant: the API client's `TokenProvider` in production (api/token-provider.ts,
 * the client's port; this class has its shape, and the wiring plugs it in).
 *
 * - Proactive refresh: `accessToken()` refreshes when the token is within `refreshBeforeExpiryMs` plus a
 *   per-instance random share of `refreshJitterMs` of its expiry (10 hours after issue, spec 8), so
 *   instances sharing a grant do not all refresh at the same second. If that refresh fails for any reason
 *   other than a revoked grant while the current token still works, the current token is returned and
 *   the refresh is tried again after a backoff (`refreshRetry`), not on every call.
 * - Reactive refresh: `refreshAfterRejection(rejected)` after a 401. If the token has already changed (another
 *   caller refreshed, or another instance did and stored it), the newer token is returned without a request.
 * - Single flight: one refresh per grant at a time; every concurrent caller awaits the same promise.
 * - Rotation safety: a refresh's new token pair is written durably to the store *before* any caller receives
 *   the new access token. If that write fails, the pair is kept in memory, no one gets the token, and the
 *   next attempt retries the write before anything else (the old refresh token may already be retired).
 * - Several instances: an `invalid_grant` answer is first checked against the store: if another instance
 *   rotated the refresh token meanwhile (re-read now and once more after `rotationGraceMs`), its pair is adopted
 *   while its access token lives, even within this instance's refresh margin (refreshing it at once would race
 *   the instances that adopted it too, and the loser would take its own invalid_grant for a revoked grant).
 *   Otherwise, while the current access token lives and the API has not rejected it, the refused refresh
 *   token is not sent again: each retry (with the backoff above) re-reads the store for a rotated pair.
 * - Revocation: once the access token expired, or the API rejected it (401), with the refresh token still
 *   refused: FatalError AUTH_GRANT_REVOKED (message: run `auth login`), `grant_valid` = 0, and every later
 *   call re-reads the store (concurrent calls share one read) and fails fast with the same error until a
 *   new grant is stored, then resumes.
 *   Nothing here exits the process: the scheduler pauses only the locations of this grant and retries
 *   them every minute (sync/scheduler/health-rule.ts), so they resume without a restart after `auth login`.
 * - A 401 for a token this manager just obtained by a refresh, before it served requests: refreshed again at
 *   most once per backoff, not on every retry (AUTH_TOKEN_REJECTED_AFTER_REFRESH, retriable, meanwhile).
 *
 * Tokens never reach logs, errors or metrics.
 *
 * This module holds the grant's state and the store interplay; beside it: when to refresh
 * (refresh-schedule.ts), sharing one read or refresh between callers (single-flight.ts), the record a token
 * response makes (grant-record.ts) and the errors the operator is told (grant-errors.ts).
 */
import { codeOf, ConnectorError, FatalError, RetriableError } from '../errors/index.js';
import { silentLogger, type Logger } from '../logging/logger.js';
import type { ConnectorMetrics } from '../metrics/metrics.js';
import type { GrantRecord, TokenStore } from './store/token-store.js';
import type { TokenEndpoint } from './token-endpoint.js';
import { TokenRequestRefused } from './token-endpoint.js';
import {
  grantRevoked,
  noGrantStored,
  refreshRefused,
  rejectedAfterRefresh,
  storeWriteFailed,
} from './grant-errors.js';
import { ACCESS_TOKEN_LIFETIME_MS, grantRecordFromResponse } from './grant-record.js';
import { DEFAULT_REFRESH_RETRY, RefreshMargin, RetryGate } from './refresh-schedule.js';
import { abortable, SingleFlight } from './single-flight.js';
import { systemClock, type Clock } from '../time/clock.js';

export { revokedGrantMessage } from './grant-errors.js';
export { ACCESS_TOKEN_LIFETIME_MS, grantRecordFromResponse } from './grant-record.js';
export { DEFAULT_REFRESH_RETRY } from './refresh-schedule.js';

/** A grant's state and its refreshes. */
export type TokenManagerMetrics = Pick<ConnectorMetrics, 'grantValid' | 'tokenExpiry' | 'tokenRefreshes'>;

export interface TokenManagerOptions {
  grant: string;
  store: TokenStore;
  endpoint: TokenEndpoint;
  refreshBeforeExpiryMs: number;
  /** Lifetime assumed when the token response has no `expires_in` (spec: 10 hours). */
  accessTokenLifetimeMs?: number;
  /** After `invalid_grant`, how long to wait for another instance's rotated token to appear in the store. */
  rotationGraceMs?: number;
  /** Up to this much earlier than `refreshBeforeExpiryMs`, chosen at random once per manager. Default 0. */
  refreshJitterMs?: number;
  /** Backoff between refresh attempts after a failure (jittered: 50-100 % of the delay). */
  refreshRetry?: { initialDelayMs: number; maxDelayMs: number };
  /** Time and the random numbers of jitter (default: the system clock). */
  clock?: Clock;
  metrics?: TokenManagerMetrics;
  logger?: Logger;
}

/**
 * A refreshed token rejected before accessToken() handed it out more often than this (about the requests
 * in flight at once) is taken as "the 401 persists after the refresh"; rejected later, it served requests
 * and its rejection is an ordinary early expiry, refreshed at once.
 */
const REJECTED_ON_ARRIVAL_HAND_OUTS = 16;

/**
 * A refresh refused because another instance rotated the refresh token is retried from the stored pair at
 * most this many times in one refresh (each retry needs the store to show yet another rotation: progress).
 */
const MAX_ROTATED_ELSEWHERE = 3;

export class TokenManager {
  readonly grant: string;
  private readonly store: TokenStore;
  private readonly endpoint: TokenEndpoint;
  private readonly lifetimeMs: number;
  private readonly rotationGraceMs: number;
  private readonly clock: Clock;
  private readonly metrics: TokenManagerMetrics | undefined;
  private readonly log: Logger;

  private current: GrantRecord | undefined;
  /** The store read under way (`record()`). */
  private readonly loading = new SingleFlight<GrantRecord>();
  /** The refresh under way: one per grant at a time. */
  private readonly inflight = new SingleFlight<GrantRecord>();
  /** A refreshed pair whose durable write failed: not handed out until it is stored. */
  private unsaved: GrantRecord | undefined;
  private revoked: { refreshToken: string; error: FatalError } | undefined;
  /** A refresh token the endpoint refused while the access token still lived (see the module comment). */
  private refused: { refreshToken: string; error: TokenRequestRefused } | undefined;
  /** The access token the last refresh produced: a 401 for it is not answered by refreshing at once. */
  private refreshedToken: string | undefined;
  /** How often accessToken() handed out `refreshedToken`: a proxy for "it served requests". */
  private handOuts = 0;
  private readonly margin: RefreshMargin;
  /** Backoff of refresh attempts after a failed one (proactive refresh, refused refresh token). */
  private readonly refreshBackoff: RetryGate;
  /** Backoff of refreshes answering a 401 for a token a refresh just produced. */
  private readonly rejectionBackoff: RetryGate;
  private lastFailure: ConnectorError | undefined;

  constructor(options: TokenManagerOptions) {
    if (options.grant.length === 0) throw new TypeError('grant is required');
    this.grant = options.grant;
    this.store = options.store;
    this.endpoint = options.endpoint;
    this.lifetimeMs = options.accessTokenLifetimeMs ?? ACCESS_TOKEN_LIFETIME_MS;
    this.rotationGraceMs = options.rotationGraceMs ?? 3_000;
    this.clock = options.clock ?? systemClock;
    this.margin = new RefreshMargin(
      options.refreshBeforeExpiryMs,
      options.refreshJitterMs ?? 0,
      this.lifetimeMs,
      this.clock,
    );
    const retry = options.refreshRetry ?? DEFAULT_REFRESH_RETRY;
    this.refreshBackoff = new RetryGate(retry, this.clock);
    this.rejectionBackoff = new RetryGate(retry, this.clock);
    this.metrics = options.metrics;
    this.log = (options.logger ?? silentLogger()).child({ component: 'token-manager', grant: options.grant });
  }

  async accessToken(signal?: AbortSignal): Promise<string> {
    const record = await this.record();
    if (record.accessToken === this.refreshedToken) this.handOuts += 1;
    if (!this.margin.due(record, this.clock.now())) return record.accessToken;
    const valid = this.clock.now() < record.accessTokenExpiresAt;
    if (this.refreshBackoff.waiting(this.clock.now())) {
      // Backing off after a failed refresh: no request until then.
      if (valid) return record.accessToken;
      throw this.lastFailure ?? new RetriableError('AUTH_TOKEN_EXPIRED', 'the access token expired');
    }
    try {
      return (await abortable(this.refresh(record, false), signal)).accessToken;
    } catch (error) {
      if (!(error instanceof ConnectorError) || error.code === 'AUTH_GRANT_REVOKED') throw error;
      this.lastFailure = error;
      const retryInMs = this.refreshBackoff.fail(this.clock.now());
      if (this.clock.now() < record.accessTokenExpiresAt) {
        this.log.warn(
          { errorCode: error.code, retryInMs },
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
    if (this.refreshedToken === rejected && this.handOuts > REJECTED_ON_ARRIVAL_HAND_OUTS) {
      this.rejectionBackoff.reset(); // it served requests before: an ordinary expiry, not a persisting 401
    } else if (this.refreshedToken === rejected) {
      // The API refuses a token we just obtained, before it served much: another refresh at once would most
      // likely fare no better (a 401 that persists after a refresh).
      const now = this.clock.now();
      if (this.rejectionBackoff.waiting(now)) {
        throw rejectedAfterRefresh(this.grant, this.rejectionBackoff.retryAt - now);
      }
      this.rejectionBackoff.fail(now);
    }
    return (await abortable(this.refresh(record, true), signal)).accessToken;
  }

  /**
   * The current grant: loaded from the store once, and re-read on every call while the grant is revoked
   * (failing fast until a new grant is stored). Single flight: concurrent callers share one read, so only one
   * of them can end a revocation (the locations a revoked grant paused retry at once after `auth login`).
   */
  private async record(): Promise<GrantRecord> {
    if (this.revoked === undefined && this.current !== undefined) return this.current;
    return this.loading.run(() => this.load());
  }

  private async load(): Promise<GrantRecord> {
    const stored = await this.store.readGrant(this.grant);
    // Taken once the read is done: the answer is compared with what is known when it is used.
    const revoked = this.revoked;
    if (revoked !== undefined) {
      if (stored === undefined || stored.refreshToken === revoked.refreshToken) throw revoked.error;
      this.log.info('a new grant was stored; resuming');
      this.revoked = undefined;
    } else if (stored === undefined) {
      throw noGrantStored(this.grant, this.store.description);
    }
    this.adopt(stored);
    return stored;
  }

  /**
   * Single flight: joins the refresh under way, or starts one from `basis`. `tokenRejected`: the API
   * answered 401 to the current access token, so it cannot be relied on until it expires.
   */
  private refresh(basis: GrantRecord, tokenRejected: boolean): Promise<GrantRecord> {
    return this.inflight.run(() => this.refreshFrom(basis, tokenRejected));
  }

  private async refreshFrom(basis: GrantRecord, tokenRejected: boolean): Promise<GrantRecord> {
    if (this.unsaved !== undefined) return this.persistAndAdopt(this.unsaved);
    // Another instance (Kafka store) may have refreshed since we loaded: use its pair rather than ours.
    let source = (await this.store.readGrant(this.grant)) ?? basis;
    if (source.accessToken !== basis.accessToken && !this.margin.due(source, this.clock.now())) {
      this.adopt(source);
      return source;
    }
    const refused = this.refused;
    if (refused !== undefined && refused.refreshToken === source.refreshToken) {
      // Still the refresh token the endpoint refused: sending it again would be refused again.
      throw this.stillRefused(source, tokenRejected, refused.error);
    }
    for (let attempt = 1; ; attempt++) {
      const started = this.clock.now();
      try {
        const response = await this.endpoint.refresh(source.refreshToken);
        const next = grantRecordFromResponse(source, response, started, this.lifetimeMs);
        const stored = await this.persistAndAdopt(next);
        this.refreshedToken = stored.accessToken;
        this.handOuts = 0;
        this.refreshBackoff.reset();
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
          const rotated =
            attempt <= MAX_ROTATED_ELSEWHERE ? await this.rotatedElsewhere(source.refreshToken) : undefined;
          if (rotated !== undefined) {
            this.log.info('refresh token was rotated by another instance; using the stored pair');
            // Another instance's fresh pair is used as it is, even when it is already within this instance's
            // refresh margin (a short-lived token, or a long grace): refreshing it again here would race the
            // other instances that adopted it too, and the loser's invalid_grant would read as a revoked grant.
            // The next accessToken() refreshes it proactively, where a refusal is not fatal.
            if (this.clock.now() < rotated.accessTokenExpiresAt) {
              this.adopt(rotated);
              return rotated;
            }
            source = rotated;
            continue;
          }
          throw this.stillRefused(source, tokenRejected, error);
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
      throw storeWriteFailed(this.grant, this.store.description, error);
    }
    this.unsaved = undefined;
    this.adopt(next);
    return next;
  }

  /** The stored pair if another writer replaced `used` (now, or within the grace period). */
  private async rotatedElsewhere(used: string): Promise<GrantRecord | undefined> {
    for (const wait of [0, this.rotationGraceMs]) {
      if (wait > 0) await this.clock.sleep(wait);
      const stored = await this.store.readGrant(this.grant);
      if (stored !== undefined && stored.refreshToken !== used) return stored;
    }
    return undefined;
  }

  /**
   * The endpoint refused `source`'s refresh token and no other instance stored a newer one. While the
   * access token lives and the API has not rejected it, that is not yet a revocation: the token keeps
   * working and the store is re-read on each retry (retriable AUTH_REFRESH_REFUSED). Otherwise revoked.
   */
  private stillRefused(
    source: GrantRecord,
    tokenRejected: boolean,
    cause: TokenRequestRefused,
  ): ConnectorError {
    if (tokenRejected || this.clock.now() >= source.accessTokenExpiresAt)
      return this.markRevoked(source.refreshToken, cause);
    if (this.refused?.refreshToken !== source.refreshToken) {
      this.refused = { refreshToken: source.refreshToken, error: cause };
      this.metrics?.tokenRefreshes.inc({ grant: this.grant, result: 'failure' });
      this.log.warn(
        { expiresAt: new Date(source.accessTokenExpiresAt).toISOString() },
        'the token endpoint refused the refresh token (invalid_grant); using the current access token while it lasts and re-reading the token store for a pair rotated by another instance',
      );
    }
    return refreshRefused(this.grant, source.accessTokenExpiresAt, cause);
  }

  private markRevoked(refreshToken: string, cause: TokenRequestRefused): FatalError {
    const error = grantRevoked(this.grant, cause);
    this.revoked = { refreshToken, error };
    this.current = undefined;
    this.metrics?.tokenRefreshes.inc({ grant: this.grant, result: 'revoked' });
    this.metrics?.grantValid.set({ grant: this.grant }, 0);
    this.log.error({ errorCode: error.code }, error.message);
    return error;
  }

  private adopt(record: GrantRecord): void {
    if (this.refused !== undefined && this.refused.refreshToken !== record.refreshToken) {
      // A pair with another refresh token (rotated elsewhere, or a new login): the refusal is history.
      this.refused = undefined;
      this.refreshBackoff.reset();
    }
    this.current = record;
    this.metrics?.tokenExpiry.set({ grant: this.grant }, record.accessTokenExpiresAt / 1000);
    this.metrics?.grantValid.set({ grant: this.grant }, 1);
  }
}
