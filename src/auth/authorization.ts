/**
 * The authorization-code flow of spec 5, steps 2–4, split where a person sits in between:
 * `start()` builds the authorization URL with a fresh state and remembers the state (short-lived) in the
 * token store; `complete(code, state)` checks the state (CSRF: unknown, expired and reused states are
 * refused before any request), redeems the code and stores the token pair.
 *
 * Used by `auth url` + `auth redeem` (two processes, the store carries the state between them) and by
 * `auth login` (one process with a local callback listener).
 */
import { FatalError } from '../errors/index.js';
import { silentLogger, type Logger } from '../logging/logger.js';
import type { ConnectorMetrics } from '../metrics/metrics.js';
import {
  assertHttpsRedirectUri,
  buildAuthorizeUrl,
  codeChallengeS256,
  isAlphanumericState,
  newCodeVerifier,
  newState,
} from './authorize-url.js';
import type { GrantRecord, TokenStore } from './store/token-store.js';
import type { TokenEndpoint } from './token-endpoint.js';
import { ACCESS_TOKEN_LIFETIME_MS, grantRecordFromResponse } from './token-manager.js';
import { systemClock, type Clock } from '../time/clock.js';
/** A grant's state once authorized. */
export type AuthorizationMetrics = Pick<ConnectorMetrics, 'grantValid' | 'tokenExpiry'>;

export interface AuthorizationOptions {
  /** Base of the OAuth endpoints. */
  baseUrl: string;
  clientId: string;
  redirectUri: string;
  scopes: readonly string[];
  grant: string;
  store: TokenStore;
  endpoint: TokenEndpoint;
  /** How long an issued state may be redeemed. */
  stateTtlMs: number;
  accessTokenLifetimeMs?: number;
  clock?: Clock;
  metrics?: AuthorizationMetrics;
  logger?: Logger;
}

export interface StartedAuthorization {
  url: string;
  state: string;
  expiresAt: number;
}

/** What a person may see after a successful redemption: no token, no secret. */
export interface GrantSummary {
  grant: string;
  clientId: string;
  scopes: string[];
  accessTokenExpiresAt: number;
  obtainedAt: number;
  store: string;
}

export function summarizeGrant(record: GrantRecord, store: string): GrantSummary {
  return {
    grant: record.grant,
    clientId: record.clientId,
    scopes: record.scopes,
    accessTokenExpiresAt: record.accessTokenExpiresAt,
    obtainedAt: record.obtainedAt,
    store,
  };
}

export class Authorization {
  private readonly clock: Clock;
  private readonly log: Logger;

  constructor(private readonly options: AuthorizationOptions) {
    // Refused at construction, before any URL is printed or any request made.
    assertHttpsRedirectUri(options.redirectUri);
    if (options.scopes.length === 0) throw new RangeError('at least one scope is required');
    if (!(options.stateTtlMs > 0)) throw new RangeError('stateTtlMs must be positive');
    this.clock = options.clock ?? systemClock;
    this.log = (options.logger ?? silentLogger()).child({ component: 'authorization', grant: options.grant });
  }

  async start(): Promise<StartedAuthorization> {
    const state = newState();
    const codeVerifier = newCodeVerifier();
    const createdAt = this.clock.now();
    const expiresAt = createdAt + this.options.stateTtlMs;
    await this.options.store.rememberState(state, {
      grant: this.options.grant,
      redirectUri: this.options.redirectUri,
      scopes: [...this.options.scopes],
      createdAt,
      expiresAt,
      codeVerifier,
    });
    const url = buildAuthorizeUrl({ ...this.options, state, codeChallenge: codeChallengeS256(codeVerifier) });
    this.log.info({ expiresAt: new Date(expiresAt).toISOString() }, 'authorization URL issued');
    return { url, state, expiresAt };
  }

  async complete(code: string, state: string, signal?: AbortSignal): Promise<GrantSummary> {
    if (code.length === 0) throw new FatalError('AUTH_CODE_MISSING', 'no authorization code was given');
    if (!isAlphanumericState(state)) {
      throw new FatalError(
        'AUTH_STATE_UNKNOWN',
        'the state is not one this connector issued (it is not alphanumeric); start again with `auth login` or `auth url`',
      );
    }
    const check = await this.options.store.consumeState(state, this.clock.now());
    switch (check.status) {
      case 'unknown':
        throw new FatalError(
          'AUTH_STATE_UNKNOWN',
          'the state does not match any authorization this connector started (possible cross-site request forgery); start again with `auth login` or `auth url`',
        );
      case 'expired':
        throw new FatalError(
          'AUTH_STATE_EXPIRED',
          'the authorization took too long and its state expired; start again with `auth login` or `auth url`',
        );
      case 'reused':
        throw new FatalError(
          'AUTH_STATE_REUSED',
          'this state was already used once (replay refused); start again with `auth login` or `auth url`',
        );
      case 'accepted':
        break;
    }
    const pending = check.pending;
    if (pending.grant !== this.options.grant) {
      throw new FatalError(
        'AUTH_STATE_GRANT_MISMATCH',
        `this state was issued for grant "${pending.grant}", not "${this.options.grant}"; pass --grant ${pending.grant}`,
      );
    }
    const started = this.clock.now();
    const response = await this.options.endpoint.redeemCode(
      code,
      pending.redirectUri,
      pending.codeVerifier,
      signal,
    );
    const record = grantRecordFromResponse(
      { grant: this.options.grant, clientId: this.options.clientId, scopes: pending.scopes },
      response,
      started,
      this.options.accessTokenLifetimeMs ?? ACCESS_TOKEN_LIFETIME_MS,
    );
    await this.options.store.writeGrant(record);
    this.options.metrics?.grantValid.set({ grant: record.grant }, 1);
    this.options.metrics?.tokenExpiry.set({ grant: record.grant }, record.accessTokenExpiresAt / 1000);
    this.log.info(
      { expiresAt: new Date(record.accessTokenExpiresAt).toISOString() },
      'authorization code redeemed; grant stored',
    );
    return summarizeGrant(record, this.options.store.description);
  }
}
