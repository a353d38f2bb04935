/**
 * Builds the OAuth machinery from the configuration: the client secret (from `${ENV}` or a file, never a
 * flag), the HTTPS dispatcher (with `api.caFile`), the token endpoint client, the encrypted token store
 * (over the backend the wiring chooses for `oauth.store`: runtime/token-store-backend.ts; key from
 * `oauth.keyEnv`/`oauth.keyFile`) and, per grant, one Authorization and one TokenManager. Used by the `auth` commands and by `run` (the sync engine asks `tokenProvider(grant)`).
 *
 * Contract: `openOAuth` validates everything it can before any network request (https redirect_uri and
 * endpoints, key present and well formed, secret readable) and throws FatalError naming the key to fix.
 * Call `close()` once at shutdown.
 */
import { readFile } from 'node:fs/promises';
import type { Agent } from 'undici';
import type { ConnectorConfig, OAuthConfig } from '../config/schema.js';
import { FatalError } from '../errors/index.js';
import type { Logger } from '../logging/logger.js';
import { Authorization } from './authorization.js';
import { assertHttpsRedirectUri } from './authorize-url.js';
import { createHttpsDispatcher } from '../https/dispatcher.js';
import type { AuthorizationMetrics } from './authorization.js';
import type { TokenEndpointMetrics } from './token-endpoint.js';
import type { TokenManagerMetrics } from './token-manager.js';
import { readPrivateFile } from '../secrets/secret-file.js';
import { loadStoreKey } from './store/store-key.js';
import { TokenStore, type EntryBackend } from './store/token-store.js';
import { HttpTokenEndpoint } from './token-endpoint.js';
import { TokenManager } from './token-manager.js';
import type { Clock } from '../time/clock.js';

/** What the OAuth parts count: grants, tokens and the token endpoint's requests. */
export type OAuthMetrics = AuthorizationMetrics & TokenManagerMetrics & TokenEndpointMetrics;

export interface OAuthDependencies {
  /**
   * The backend of the store `oauth.store` names (runtime/token-store-backend.ts), asked once the settings are
   * known to be valid.
   */
  backendFor(store: OAuthConfig['store']): EntryBackend;
  metrics?: OAuthMetrics;
  logger?: Logger;
  env?: NodeJS.ProcessEnv;
  clock?: Clock;
}

export class OAuthRuntime {
  private readonly managers = new Map<string, TokenManager>();

  constructor(
    readonly settings: OAuthConfig,
    /** Base of /oauth/authorize and /oauth/token. */
    readonly baseUrl: string,
    readonly store: TokenStore,
    readonly endpoint: HttpTokenEndpoint,
    private readonly dispatcher: Agent,
    private readonly deps: OAuthDependencies,
  ) {}

  /** The authorization flow (auth url / redeem / login) for `grant` (default: `oauth.grant`). */
  authorization(grant: string = this.settings.grant): Authorization {
    return new Authorization({
      baseUrl: this.baseUrl,
      clientId: this.settings.clientId,
      redirectUri: this.settings.redirectUri,
      scopes: this.settings.scopes,
      grant,
      store: this.store,
      endpoint: this.endpoint,
      stateTtlMs: this.settings.stateTtlMs,
      accessTokenLifetimeMs: this.settings.accessTokenLifetimeMs,
      ...this.optionalDeps(),
    });
  }

  /** The TokenProvider of `grant`; one per grant per process, so single flight holds process-wide. */
  tokenProvider(grant: string = this.settings.grant): TokenManager {
    let manager = this.managers.get(grant);
    if (manager === undefined) {
      manager = new TokenManager({
        grant,
        store: this.store,
        endpoint: this.endpoint,
        refreshBeforeExpiryMs: this.settings.refreshBeforeExpiryMs,
        accessTokenLifetimeMs: this.settings.accessTokenLifetimeMs,
        rotationGraceMs: this.settings.rotationGraceMs,
        refreshJitterMs: this.settings.refreshJitterMs,
        ...this.optionalDeps(),
      });
      this.managers.set(grant, manager);
    }
    return manager;
  }

  async close(): Promise<void> {
    await this.store.close();
    await this.dispatcher.close();
  }

  private optionalDeps(): { clock?: Clock; metrics?: OAuthMetrics; logger?: Logger } {
    const { clock, metrics, logger } = this.deps;
    return { ...(clock && { clock }), ...(metrics && { metrics }), ...(logger && { logger }) };
  }
}

export async function openOAuth(config: ConnectorConfig, deps: OAuthDependencies): Promise<OAuthRuntime> {
  const settings = config.oauth;
  if (settings === undefined) {
    throw new FatalError(
      'AUTH_NOT_CONFIGURED',
      'the configuration has no `oauth` section; add one (see docs/oauth.md) to use the auth commands',
    );
  }
  assertHttpsRedirectUri(settings.redirectUri);
  const baseUrl = settings.baseUrl ?? config.api.baseUrl;
  if (!baseUrl.startsWith('https://')) {
    throw new FatalError(
      'AUTH_ENDPOINT_NOT_HTTPS',
      `the OAuth endpoints must be https (spec 1); set oauth.baseUrl or api.baseUrl to an https:// URL`,
    );
  }
  const clientSecret = await resolveClientSecret(settings);
  const key = await loadStoreKey(
    {
      keyEnv: settings.keyEnv,
      keyFile: settings.keyFile,
      dataFile: settings.store.type === 'file' ? settings.store.path : undefined,
    },
    deps.env ?? process.env,
  );
  const extraCaPem =
    config.api.caFile === undefined ? undefined : await readText(config.api.caFile, 'api.caFile');
  const dispatcher = createHttpsDispatcher({ extraCaPem });
  const backend = deps.backendFor(settings.store);
  const endpoint = new HttpTokenEndpoint({
    baseUrl,
    clientId: settings.clientId,
    clientSecret,
    dispatcher,
    timeoutMs: config.api.requestTimeoutMs,
    ...(deps.metrics && { metrics: deps.metrics }),
    ...(deps.clock && { clock: deps.clock }),
  });
  return new OAuthRuntime(settings, baseUrl, new TokenStore(backend, key), endpoint, dispatcher, deps);
}

/** `oauth.clientSecret` (already interpolated from `${ENV}`) or the first line of `oauth.clientSecretFile`. */
export async function resolveClientSecret(
  settings: Pick<OAuthConfig, 'clientSecret' | 'clientSecretFile'>,
): Promise<string> {
  if (settings.clientSecret !== undefined) return settings.clientSecret;
  if (settings.clientSecretFile === undefined) {
    throw new FatalError(
      'AUTH_CLIENT_SECRET_MISSING',
      'set oauth.clientSecret (as ${ENV}) or oauth.clientSecretFile',
    );
  }
  const secret = (await readText(settings.clientSecretFile, 'oauth.clientSecretFile', true)).trim();
  if (secret === '')
    throw new FatalError(
      'AUTH_CLIENT_SECRET_MISSING',
      `oauth.clientSecretFile ${settings.clientSecretFile} is empty`,
    );
  return secret;
}

/** Reads a file named by a config key; `secret`: the file holds a secret (see secrets/secret-file.ts). */
async function readText(path: string, key: string, secret = false): Promise<string> {
  try {
    return secret ? await readPrivateFile(path, key) : await readFile(path, 'utf8');
  } catch (error) {
    if (error instanceof FatalError) throw error;
    throw new FatalError(
      'CONFIG_FILE_UNREADABLE',
      `cannot read ${key} (${path}): ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
      {
        cause: error,
      },
    );
  }
}
