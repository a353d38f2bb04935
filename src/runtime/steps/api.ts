/**
 * Start-up step 3, the calls API: token providers (OAuth grant(s) from the encrypted store, or the static
 * development token), the boundary fingerprints' key, one HTTP transport (keep-alive pool, global rate limit
 * and concurrency cap) shared by one API client and one enricher per grant: each grant has its own token, all
 * share the transport's connection pool, rate limit and concurrency cap.
 */
import type { KafkaClient } from '../../kafka/client/port.js';
import { CallsApiClient } from '../../api/calls-api-client.js';
import { HttpTransport } from '../../api/http-transport.js';
import { openOAuth, resolveClientSecret } from '../../auth/oauth-runtime.js';
import { StaticTokenProvider, type TokenProvider } from '../../api/token-provider.js';
import type { ConnectorConfig } from '../../config/schema.js';
import { FatalError } from '../../errors/index.js';
import { Enricher } from '../../sync/location/enricher.js';
import { BoundaryFingerprints } from '../../sync/location/fingerprint.js';
import { tokenStoreBackend } from '../token-store-backend.js';
import type { StartContext } from './context.js';

/** Grant name used with a static development token. */
const STATIC_GRANT = 'static';

export type Source = ConnectorConfig['sources'][number];

export interface Grant {
  tokens: TokenProvider;
  api: CallsApiClient;
  enricher: Enricher;
}

export interface Api {
  transport: HttpTransport;
  /** The grants whose clients were built so far, by name. */
  grants: ReadonlyMap<string, Grant>;
  /**
   * The clients of grant `name`, built on first use (a grant a reload added is built then): its token provider,
   * API client and enricher, sharing the one transport.
   */
  grant(name: string): Grant;
  /** The grant a source's locations use. */
  grantOf(source: Source): string;
  fingerprints: BoundaryFingerprints;
}

export async function openApi(
  ctx: StartContext,
  kafka: KafkaClient,
  env: NodeJS.ProcessEnv | undefined,
): Promise<Api> {
  const { config, logger, metrics, clock, lifecycle } = ctx;
  const oauth =
    config.oauth === undefined
      ? null
      : await openOAuth(config, {
          backendFor: tokenStoreBackend(config, { kafka, logger }),
          metrics,
          logger,
          ...(env && { env }),
        });
  if (oauth) lifecycle.defer('oauth', () => oauth.close());
  // Keyed by a secret all instances share and none stores (sync/location/fingerprint.ts says why it is keyed).
  const fingerprints = BoundaryFingerprints.fromSecret(
    config.oauth === undefined ? (config.auth.staticToken ?? '') : await resolveClientSecret(config.oauth),
  );
  const tokensFor = (grant: string): TokenProvider => {
    if (oauth) return oauth.tokenProvider(grant);
    const token = config.auth.staticToken;
    if (token === undefined)
      throw new FatalError('AUTH_NOT_CONFIGURED', 'configure `oauth` or `auth.staticToken`');
    return new StaticTokenProvider(token);
  };

  // The scheduler parks the locations of a parked grant (sync/scheduler/scheduler.ts): their requests are refused at
  // once rather than hold a worker for the whole hold: one grant's long hold must not take the workers of the
  // others.
  const transport = await HttpTransport.fromConfig(config.api, metrics, clock, logger, {
    refuseWhileParked: true,
  });
  lifecycle.defer('api transport', () => transport.close());

  const grantOf = (source: Source) => (oauth ? source.grant : STATIC_GRANT);
  const grants = new Map<string, Grant>();
  const grant = (name: string): Grant => {
    const built = grants.get(name);
    if (built !== undefined) return built;
    const tokens = tokensFor(name);
    const api = new CallsApiClient({
      http: transport,
      grant: name,
      tokens,
      settings: config.api,
      metrics,
      logger,
      clock,
    });
    const enricher = new Enricher({
      api,
      enabled: config.api.enrich,
      concurrency: config.api.enrichConcurrency,
      poisonPageAttempts: config.api.poisonCallPageAttempts,
      clock,
    });
    grants.set(name, { tokens, api, enricher });
    return { tokens, api, enricher };
  };
  for (const source of config.sources) grant(grantOf(source));
  return { transport, grants, grant, grantOf, fingerprints };
}
