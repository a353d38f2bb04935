/**
 * SASL/OAUTHBEARER tokens for managed Kafka (the OIDC login of KIP-768): an OAuth 2.0 token endpoint is asked
 * for an access token with the client credentials grant (RFC 6749 4.4), as Kafka's own
 * OAuthBearerLoginCallbackHandler does: `POST tokenEndpointUrl`, form body `grant_type=client_credentials`
 * (+ `scope`), the client authenticated with HTTP Basic (client id and secret form-encoded, RFC 6749 2.3.1).
 * kafkajs calls `provide()` for every connection it authenticates (and re-authenticates when the broker sets a
 * session lifetime), so tokens are cached: fetched again once 80 % of their lifetime has passed (Kafka's
 * sasl.login.refresh.window.factor), one request at a time. A refresh that fails while the cached token is still
 * valid returns that token (the next connection tries again).
 *
 * Failures, named by what happens next (kafkajs gives up at once on a non-retriable error, and retries the
 * connection on a retriable one):
 * - the endpoint refused the client (401, or `invalid_client`): FatalError KAFKA_OAUTH_CLIENT_REJECTED;
 * - any other refusal (4xx, e.g. `invalid_scope`): FatalError KAFKA_OAUTH_TOKEN_REFUSED;
 * - an answer without an access token: FatalError KAFKA_OAUTH_TOKEN_INVALID;
 * - an untrusted certificate: FatalError KAFKA_OAUTH_TLS_UNTRUSTED (set kafka.sasl.caFile);
 * - network errors, timeouts, 408/429/5xx: RetriableError KAFKA_OAUTH_TOKEN_UNAVAILABLE.
 * Messages never carry the client secret or a token.
 */
import type { Mechanism } from 'kafkajs';
import { request, type Dispatcher } from 'undici';
import { untrustedCertificateCode } from '../../https/dispatcher.js';
import { FatalError, RetriableError } from '../../errors/index.js';
import { parseJsonObject } from '../../json/json-object.js';
import { scrubKnownSecrets, scrubSecretsInText } from '../../logging/scrub-text.js';
import { readPrivateFile } from '../../secrets/secret-file.js';
import { systemClock, timeoutSignal, type Clock } from '../../time/clock.js';

/** Share of a token's lifetime after which it is fetched again (Kafka's sasl.login.refresh.window.factor). */
const REFRESH_AT_SHARE = 0.8;
/** Lifetime assumed for a token whose response carries no `expires_in` and that is not a JWT with `exp`. */
const DEFAULT_LIFETIME_MS = 60_000;
/** Largest token response read. */
const MAX_RESPONSE_BYTES = 64 * 1024;

export interface OAuthBearerSettings {
  tokenEndpointUrl: string;
  clientId: string;
  clientSecret?: string | undefined;
  clientSecretFile?: string | undefined;
  scope?: string | undefined;
  extensions?: Record<string, string> | undefined;
  requestTimeoutMs: number;
}

/** What kafkajs' oauthBearerProvider returns. */
export interface OAuthBearerToken {
  value: string;
  extensions?: Record<string, string>;
}

interface CachedToken {
  value: string;
  refreshAt: number;
  expiresAt: number;
}

export class ClientCredentialsTokens {
  private cached: CachedToken | null = null;
  private inFlight: Promise<CachedToken> | null = null;
  private readonly clock: Clock;

  constructor(
    private readonly settings: OAuthBearerSettings,
    private readonly dispatcher: Dispatcher,
    clock: Clock = systemClock,
  ) {
    this.clock = clock;
  }

  /** Forgets the cached token (a broker refused it): the next connection fetches a new one. */
  invalidate(): void {
    this.cached = null;
  }

  /** A valid access token, from the cache while it is fresh. */
  async provide(): Promise<OAuthBearerToken> {
    const now = this.clock.now();
    let token = this.cached;
    if (token === null || now >= token.refreshAt) {
      try {
        token = await this.fetchOnce();
      } catch (error) {
        // A refresh that failed for a passing reason while the cached token still lives: keep using it.
        if (!(error instanceof RetriableError) || token === null || this.clock.now() >= token.expiresAt)
          throw error;
      }
    }
    const extensions = this.settings.extensions;
    return { value: token.value, ...(extensions === undefined ? {} : { extensions }) };
  }

  private fetchOnce(): Promise<CachedToken> {
    this.inFlight ??= this.fetchToken()
      .then((token) => (this.cached = token))
      .finally(() => {
        this.inFlight = null;
      });
    return this.inFlight;
  }

  private async fetchToken(): Promise<CachedToken> {
    const { tokenEndpointUrl, clientId, scope } = this.settings;
    const secret = await this.clientSecret();
    const shown = shownUrl(tokenEndpointUrl);
    const basic = Buffer.from(`${formEncode(clientId)}:${formEncode(secret)}`).toString('base64');
    const body = new URLSearchParams({ grant_type: 'client_credentials', ...(scope && { scope }) });
    const timeout = timeoutSignal(this.clock, this.settings.requestTimeoutMs);
    const requestedAt = this.clock.now();
    let status: number;
    let text: string;
    try {
      const response = await request(tokenEndpointUrl, {
        method: 'POST',
        dispatcher: this.dispatcher,
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
          authorization: `Basic ${basic}`,
        },
        body: body.toString(),
        signal: timeout.signal,
      });
      status = response.statusCode;
      text = await boundedText(response.body);
    } catch (error) {
      const tlsCode = untrustedCertificateCode(error);
      if (tlsCode !== undefined)
        throw new FatalError(
          'KAFKA_OAUTH_TLS_UNTRUSTED',
          `the certificate of the Kafka token endpoint ${shown} is not trusted (${tlsCode}): if a private CA signed it, ` +
            'set kafka.sasl.caFile to that CA certificate (PEM)',
          { cause: error },
        );
      const reason = timeout.signal.aborted
        ? 'timeout'
        : ((error as NodeJS.ErrnoException).code ?? 'network');
      throw new RetriableError(
        'KAFKA_OAUTH_TOKEN_UNAVAILABLE',
        `the Kafka token endpoint ${shown} could not be reached (${reason}): check kafka.sasl.tokenEndpointUrl`,
        { cause: error },
      );
    } finally {
      timeout.cancel();
    }
    return this.interpret(status, text, secret, shown, requestedAt);
  }

  private interpret(
    status: number,
    text: string,
    secret: string,
    shown: string,
    requestedAt: number,
  ): CachedToken {
    const json = parseJsonObject(text);
    if (status >= 200 && status < 300) {
      const value = json?.access_token;
      if (typeof value !== 'string' || value === '')
        throw new FatalError(
          'KAFKA_OAUTH_TOKEN_INVALID',
          `the Kafka token endpoint ${shown} answered HTTP ${status} without an access_token: check kafka.sasl.tokenEndpointUrl`,
        );
      const lifetimeMs = lifetimeOf(json?.expires_in, value, requestedAt);
      return {
        value,
        refreshAt: requestedAt + lifetimeMs * REFRESH_AT_SHARE,
        expiresAt: requestedAt + lifetimeMs,
      };
    }
    const oauthError = typeof json?.error === 'string' ? json.error : undefined;
    const description = typeof json?.error_description === 'string' ? json.error_description : undefined;
    const said = scrubSecretsInText(
      scrubKnownSecrets(
        [oauthError, description].filter((part) => part !== undefined).join(': ') || text.slice(0, 200),
        [secret],
      ),
    );
    const answer = `HTTP ${status}${said === '' ? '' : ` ${said}`}`;
    if (status === 408 || status === 429 || status >= 500)
      throw new RetriableError(
        'KAFKA_OAUTH_TOKEN_UNAVAILABLE',
        `the Kafka token endpoint ${shown} is unavailable (${answer})`,
      );
    if (status === 401 || oauthError === 'invalid_client' || oauthError === 'unauthorized_client')
      throw new FatalError(
        'KAFKA_OAUTH_CLIENT_REJECTED',
        `the Kafka token endpoint ${shown} refused client ${this.settings.clientId} (${answer}): check ` +
          'kafka.sasl.clientId and the client secret (kafka.sasl.clientSecret from ${ENV}, or kafka.sasl.clientSecretFile)',
      );
    throw new FatalError(
      'KAFKA_OAUTH_TOKEN_REFUSED',
      `the Kafka token endpoint ${shown} refused the token request (${answer}): check kafka.sasl.scope and the ` +
        "client's grants at the identity provider",
    );
  }

  private async clientSecret(): Promise<string> {
    const { clientSecret, clientSecretFile } = this.settings;
    if (clientSecret !== undefined) return clientSecret;
    if (clientSecretFile === undefined)
      throw new FatalError(
        'KAFKA_OAUTH_CLIENT_REJECTED',
        'set kafka.sasl.clientSecret (from ${ENV}) or kafka.sasl.clientSecretFile',
      );
    let text: string;
    try {
      text = await readPrivateFile(clientSecretFile, 'kafka.sasl.clientSecretFile');
    } catch (error) {
      if (error instanceof FatalError) throw error;
      throw new FatalError(
        'KAFKA_OAUTH_SECRET_FILE',
        `cannot read kafka.sasl.clientSecretFile (${clientSecretFile}): fix the path or permissions`,
        { cause: error },
      );
    }
    const secret = text.trim();
    if (secret === '')
      throw new FatalError(
        'KAFKA_OAUTH_SECRET_FILE',
        `kafka.sasl.clientSecretFile ${clientSecretFile} is empty`,
      );
    return secret;
  }
}

const SOH = '\u0001';

/**
 * The kafkajs SASL mechanism: OAUTHBEARER (RFC 7628) with `tokens`. kafkajs' built-in one takes the broker's
 * answer to a refused token (a challenge carrying `{"status":"invalid_token"}`, RFC 7628 3.2.2) for success, and
 * the broker then drops the connection: the client only sees "No brokers in the broker pool" and retries for
 * ever. This one reads the answer and fails with KAFKA_OAUTH_TOKEN_REJECTED, forgetting the token.
 */
export function oauthBearerMechanism(tokens: ClientCredentialsTokens): Mechanism {
  return {
    mechanism: 'OAUTHBEARER',
    authenticationProvider: ({ host, port, saslAuthenticate }) => ({
      authenticate: async () => {
        const token = await tokens.provide();
        const extensions = Object.entries(token.extensions ?? {}).map(([k, v]) => `${SOH}${k}=${v}`);
        // The GS2 header without authorization identity, then auth=Bearer and the extensions (RFC 7628 3.1).
        const message = Buffer.from(`n,,${SOH}auth=Bearer ${token.value}${extensions.join('')}${SOH}${SOH}`);
        const length = Buffer.alloc(4);
        length.writeInt32BE(message.length);
        const challenge = await saslAuthenticate<Buffer>({
          request: { encode: () => Buffer.concat([length, message]) },
          // kafkajs hands the answer on as protocol BYTES: a 4-byte length (-1: null), then the bytes.
          response: {
            decode: (raw) => raw.subarray(4, 4 + Math.max(0, raw.readInt32BE(0))),
            parse: (data) => data,
          },
        });
        if (challenge === undefined || challenge === null || challenge.length === 0) return;
        tokens.invalidate();
        const status = parseJsonObject(challenge.toString('utf8'))?.status;
        throw new FatalError(
          'KAFKA_OAUTH_TOKEN_REJECTED',
          `the broker ${host}:${port} refused the OAUTHBEARER token (${typeof status === 'string' ? status : 'refused'}): ` +
            "the token from kafka.sasl.tokenEndpointUrl is not valid for this cluster; check the cluster's expected " +
            'issuer, audience and JWKS (broker log), and kafka.sasl.scope and kafka.sasl.extensions',
        );
      },
    }),
  };
}

/**
 * A token's lifetime: `expires_in` (seconds) when the response has it, else the `exp` claim of a JWT access
 * token, else DEFAULT_LIFETIME_MS.
 */
export function lifetimeOf(expiresIn: unknown, token: string, now: number): number {
  const seconds = typeof expiresIn === 'string' ? Number(expiresIn) : expiresIn;
  if (typeof seconds === 'number' && Number.isFinite(seconds) && seconds > 0) return seconds * 1000;
  const payload = token.split('.')[1];
  if (payload !== undefined) {
    const claims = parseJsonObject(Buffer.from(payload, 'base64url').toString('utf8'));
    if (typeof claims?.exp === 'number' && claims.exp * 1000 > now) return claims.exp * 1000 - now;
  }
  return DEFAULT_LIFETIME_MS;
}

/** application/x-www-form-urlencoded, as RFC 6749 2.3.1 asks of the Basic credentials. */
function formEncode(value: string): string {
  return new URLSearchParams({ v: value }).toString().slice(2);
}

function shownUrl(url: string): string {
  const parsed = new URL(url);
  return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
}

async function boundedText(body: AsyncIterable<Buffer> & { destroy(): unknown }): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > MAX_RESPONSE_BYTES) {
      body.destroy();
      throw new Error(`token response larger than ${MAX_RESPONSE_BYTES} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
