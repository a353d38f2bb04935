/**
 * Client of the token endpoint (spec 4.2): `POST {base}/oauth/token` with a JSON body (never form encoding),
 * for both code redemption and refresh.
 *
 * Failures are classified by what happens next:
 * - the service refused the grant (`invalid_grant`): TokenRequestRefused, code AUTH_INVALID_GRANT (fatal for the
 *   grant; the token manager decides whether it means "revoked" or "rotated by another instance");
 * - the service refused the client (`invalid_client`): AUTH_CLIENT_REJECTED (fatal, never heals: fix the secret);
 * - any other 4xx, a bare 401 included: AUTH_TOKEN_REQUEST_REFUSED (fatal; a location it stopped heals by backoff);
 * - network errors, timeouts, 408/429/5xx: retried per `retry`, then RetriableError AUTH_TOKEN_ENDPOINT_UNAVAILABLE;
 * - a 2xx body without an access token: AUTH_TOKEN_RESPONSE_INVALID (fatal);
 * - a server certificate that does not verify: AUTH_ENDPOINT_TLS_UNTRUSTED (fatal: configure api.caFile).
 * Messages carry the OAuth error code and description with every secret of the request scrubbed out.
 *
 * Retrying a refresh whose response was lost is inherently risky when the service rotates refresh tokens (the
 * first attempt may have retired the token we retry with); see docs/oauth.md "Rotation".
 */
import { request, type Dispatcher } from 'undici';
import { FatalError, RetriableError, type ErrorCode } from '../errors/index.js';
import type { ConnectorMetrics } from '../metrics/metrics.js';
import { statusClass } from '../metrics/metrics.js';
import { parseJsonObject } from '../json/json-object.js';
import { scrubKnownSecrets, scrubSecretsInText } from '../logging/scrub-text.js';
import { oauthEndpoint } from './authorize-url.js';
import { untrustedCertificateCode } from '../https/dispatcher.js';
import { retrying } from '../time/backoff.js';
import { systemClock, timeoutSignal, type Clock } from '../time/clock.js';
/** The token endpoint's requests and retries. */
export type TokenEndpointMetrics = Pick<ConnectorMetrics, 'apiRequestDuration' | 'apiRetries'>;

export interface TokenResponse {
  accessToken: string;
  /** Absent when the service keeps the previous refresh token (no rotation). */
  refreshToken: string | undefined;
  /** `expires_in` when the service sends it; the spec fixes 10 hours and does not name the field. */
  expiresInSeconds: number | undefined;
  /** `scope` when the service sends it. */
  scope: string | undefined;
}

/** The seam the token manager and the authorization flow depend on. */
export interface TokenEndpoint {
  /** `codeVerifier`: the PKCE verifier of the authorization request (sent as code_verifier). */
  redeemCode(
    code: string,
    redirectUri: string,
    codeVerifier?: string,
    signal?: AbortSignal,
  ): Promise<TokenResponse>;
  refresh(refreshToken: string, signal?: AbortSignal): Promise<TokenResponse>;
}

export class TokenRequestRefused extends FatalError {
  constructor(
    code: ErrorCode,
    message: string,
    readonly status: number,
    readonly oauthError: string | undefined,
  ) {
    super(code, message, { details: { status, oauthError } });
  }
}

export interface TokenRetryPolicy {
  /** Attempts in all, the first included. */
  maxAttempts: number;
  initialDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_TOKEN_RETRY: TokenRetryPolicy = {
  maxAttempts: 3,
  initialDelayMs: 250,
  maxDelayMs: 5_000,
};

export interface HttpTokenEndpointOptions {
  baseUrl: string;
  clientId: string;
  clientSecret: string;
  dispatcher: Dispatcher;
  timeoutMs?: number;
  retry?: TokenRetryPolicy;
  metrics?: TokenEndpointMetrics;
  /** Largest response body read; a longer one fails the attempt (retried). Default 64 KiB. */
  maxResponseBytes?: number;
  /** Retry waits, their jitter and the request deadline (default: the system clock). */
  clock?: Clock;
}

/** A token response is a few hundred bytes; anything near this is not one. */
export const DEFAULT_MAX_TOKEN_RESPONSE_BYTES = 64 * 1024;

const RETRIABLE_STATUSES = new Set([408, 425, 429, 500, 502, 503, 504]);

export class HttpTokenEndpoint implements TokenEndpoint {
  private readonly url: string;
  readonly #clientSecret: string;
  private readonly timeoutMs: number;
  private readonly retry: TokenRetryPolicy;
  private readonly clock: Clock;

  constructor(private readonly options: HttpTokenEndpointOptions) {
    const base = new URL(options.baseUrl);
    if (base.protocol !== 'https:') {
      throw new FatalError(
        'AUTH_ENDPOINT_NOT_HTTPS',
        `the OAuth endpoints must be reached over https (spec 1), got ${base.origin}`,
      );
    }
    if (options.clientId.length === 0) throw new TypeError('clientId is required');
    if (options.clientSecret.length === 0) throw new TypeError('clientSecret is required');
    this.url = oauthEndpoint(options.baseUrl, '/oauth/token');
    this.#clientSecret = options.clientSecret;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.retry = options.retry ?? DEFAULT_TOKEN_RETRY;
    this.clock = options.clock ?? systemClock;
    if (this.retry.maxAttempts < 1) throw new RangeError('retry.maxAttempts must be at least 1');
  }

  redeemCode(
    code: string,
    redirectUri: string,
    codeVerifier?: string,
    signal?: AbortSignal,
  ): Promise<TokenResponse> {
    const body = {
      grant_type: 'authorization_code',
      code,
      client_id: this.options.clientId,
      client_secret: this.#clientSecret,
      redirect_uri: redirectUri,
      ...(codeVerifier !== undefined && { code_verifier: codeVerifier }),
    };
    return this.post(body, codeVerifier === undefined ? [code] : [code, codeVerifier], 'redeem', signal);
  }

  refresh(refreshToken: string, signal?: AbortSignal): Promise<TokenResponse> {
    const body = {
      grant_type: 'refresh_token',
      refresh_token: refreshToken,
      client_id: this.options.clientId,
      client_secret: this.#clientSecret,
    };
    return this.post(body, [refreshToken], 'refresh', signal);
  }

  private async post(
    body: Record<string, string>,
    requestSecrets: string[],
    purpose: 'redeem' | 'refresh',
    signal: AbortSignal | undefined,
  ): Promise<TokenResponse> {
    const secrets = [this.#clientSecret, ...requestSecrets];
    // Doubling delays, 50-100 % of each at random (time/backoff.ts); the last failure is thrown as it is.
    return retrying(
      { ...this.retry, multiplier: 2, jitter: 0.5 },
      {
        clock: this.clock,
        ...(signal && { signal }),
        retriable: (error) => error instanceof RetriableError,
        onRetry: ({ error }) =>
          this.options.metrics?.apiRetries.inc({
            endpoint: 'token',
            reason: (error as RetriableError).details.reason as string,
          }),
      },
      () => this.postOnce(body, secrets, purpose, signal),
    );
  }

  private async postOnce(
    body: Record<string, string>,
    secrets: string[],
    purpose: 'redeem' | 'refresh',
    signal: AbortSignal | undefined,
  ): Promise<TokenResponse> {
    const started = performance.now();
    const timeout = timeoutSignal(this.clock, this.timeoutMs);
    let status: number | undefined;
    try {
      const response = await request(this.url, {
        method: 'POST',
        dispatcher: this.options.dispatcher,
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify(body),
        signal: signal === undefined ? timeout.signal : AbortSignal.any([signal, timeout.signal]),
      });
      status = response.statusCode;
      const text = await this.boundedText(response.body);
      return this.interpret(status, text, secrets, purpose);
    } catch (error) {
      if (error instanceof FatalError || error instanceof RetriableError) throw error;
      if (signal?.aborted) throw error;
      const tlsCode = untrustedCertificateCode(error);
      if (tlsCode !== undefined) {
        throw new FatalError(
          'AUTH_ENDPOINT_TLS_UNTRUSTED',
          `the certificate of ${new URL(this.url).origin} is not trusted (${tlsCode}); if the service uses a private CA ` +
            '(e.g. the sandbox), set api.caFile to its PEM. Certificate verification cannot be turned off',
          { cause: error },
        );
      }
      const reason = timeout.signal.aborted ? 'timeout' : 'network';
      throw new RetriableError(
        'AUTH_TOKEN_ENDPOINT_UNAVAILABLE',
        `the token endpoint ${this.url} could not be reached (${reason}: ${scrubKnownSecrets(errorSummary(error), secrets)})`,
        { cause: error, details: { reason } },
      );
    } finally {
      timeout.cancel();
      this.options.metrics?.apiRequestDuration.observe(
        { endpoint: 'token', status_class: statusClass(status) },
        (performance.now() - started) / 1000,
      );
    }
  }

  /** The body as UTF-8, reading no more than maxResponseBytes (a hostile or broken endpoint cannot exhaust memory). */
  private async boundedText(body: AsyncIterable<unknown> & { destroy(): unknown }): Promise<string> {
    const limit = this.options.maxResponseBytes ?? DEFAULT_MAX_TOKEN_RESPONSE_BYTES;
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of body) {
      const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
      size += buffer.length;
      if (size > limit) {
        body.destroy();
        throw new RetriableError(
          'AUTH_TOKEN_RESPONSE_TOO_LARGE',
          `the token endpoint's response exceeds ${limit} bytes; it is not a token response`,
          { details: { reason: 'too_large' } },
        );
      }
      chunks.push(buffer);
    }
    return Buffer.concat(chunks).toString('utf8');
  }

  private interpret(
    status: number,
    text: string,
    secrets: string[],
    purpose: 'redeem' | 'refresh',
  ): TokenResponse {
    const json = parseJsonObject(text);
    if (status >= 200 && status < 300) {
      const accessToken = stringField(json, 'access_token');
      if (accessToken === undefined) {
        throw new FatalError(
          'AUTH_TOKEN_RESPONSE_INVALID',
          `the token endpoint answered ${status} without an access_token`,
        );
      }
      const expiresIn = json?.expires_in;
      return {
        accessToken,
        refreshToken: stringField(json, 'refresh_token'),
        expiresInSeconds: typeof expiresIn === 'number' && expiresIn > 0 ? expiresIn : undefined,
        scope: stringField(json, 'scope'),
      };
    }
    if (RETRIABLE_STATUSES.has(status)) {
      throw new RetriableError('AUTH_TOKEN_ENDPOINT_UNAVAILABLE', `the token endpoint answered ${status}`, {
        details: { reason: statusClass(status), status },
      });
    }
    const oauthError = stringField(json, 'error');
    const description = stringField(json, 'error_description');
    // The server's own text: scrubbed of what we sent and of anything token-shaped, then truncated.
    const serverText = (text: string, limit: number): string =>
      scrubSecretsInText(scrubKnownSecrets(text, secrets)).slice(0, limit);
    const said = `${status}${oauthError === undefined ? '' : ` ${serverText(oauthError, 64)}`}${
      description === undefined ? '' : `: ${serverText(description, 300)}`
    }`;
    // Only the service's own word (invalid_client) names the credentials: a bare 401 (a gateway, a proxy, an
    // identity provider hiccup) falls through to AUTH_TOKEN_REQUEST_REFUSED, which heals with a growing
    // backoff instead of stopping the grant until a restart.
    if (oauthError === 'invalid_client') {
      throw new TokenRequestRefused(
        'AUTH_CLIENT_REJECTED',
        `the token endpoint refused the client credentials of client_id "${this.options.clientId}" (${said}); ` +
          'check oauth.clientId and the client secret (oauth.clientSecret from an environment variable, or oauth.clientSecretFile)',
        status,
        oauthError,
      );
    }
    if (oauthError === 'invalid_grant') {
      const what =
        purpose === 'redeem'
          ? 'the authorization code was refused (expired, already used, or issued for another redirect_uri); run `calls-connector auth login` again'
          : 'the refresh token was refused';
      throw new TokenRequestRefused('AUTH_INVALID_GRANT', `${what} (${said})`, status, oauthError);
    }
    throw new TokenRequestRefused(
      'AUTH_TOKEN_REQUEST_REFUSED',
      `the token endpoint refused the ${purpose} request (${said})`,
      status,
      oauthError,
    );
  }
}

function stringField(json: Record<string, unknown> | undefined, name: string): string | undefined {
  const value = json?.[name];
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

function errorSummary(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === undefined ? error.message : `${code} ${error.message}`;
  }
  return String(error);
}
