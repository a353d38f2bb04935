/**
 * The real OAuth flow against the sandbox's auto-approving user, with no person at a browser: used by the demo
 * (and the tests that run the connector with OAuth). It runs exactly what `auth login` runs — authorization URL
 * with a fresh state, consent, redirect to a local HTTPS listener, state check, code redemption, encrypted
 * storage — with a small HTTPS client in place of the browser.
 */
import { Agent, request } from 'undici';
import type { GrantSummary } from '../auth/authorization.js';
import { CallbackListener } from '../auth/callback-listener.js';
import { login } from '../auth/login.js';
import { openOAuth } from '../auth/oauth-runtime.js';
import type { ConnectorConfig } from '../config/schema.js';
import { FatalError } from '../errors/index.js';
import type { Logger } from '../logging/logger.js';
import { tokenStoreBackend } from '../runtime/token-store-backend.js';

/**
 * Opens the authorization URL (the sandbox's user auto-approves) and follows the redirect to the callback
 * listener, trusting exactly the two certificates involved.
 */
async function followAuthorization(
  url: string,
  sandboxCaPem: string,
  listenerCertPem: string,
): Promise<void> {
  const dispatcher = new Agent({ connect: { ca: [sandboxCaPem, listenerCertPem] } });
  try {
    const consent = await request(url, { dispatcher });
    await consent.body.dump();
    const location = consent.headers.location;
    if (consent.statusCode !== 302 || typeof location !== 'string') {
      throw new FatalError(
        'DEMO_AUTHORIZE_FAILED',
        `the sandbox answered ${consent.statusCode} to the authorization request (is its user set to auto-approve?)`,
      );
    }
    const callback = await request(location, { dispatcher });
    await callback.body.dump();
  } finally {
    await dispatcher.close();
  }
}

export interface SandboxAuthorizationOptions {
  /** A config with an `oauth` section whose redirectUri is a free loopback https address. */
  config: ConnectorConfig;
  sandboxCaPem: string;
  logger: Logger;
  env?: NodeJS.ProcessEnv;
  signal?: AbortSignal;
  show?: (url: string) => void;
}

/** Authorizes `config.oauth.grant` and stores the grant; resolves with its summary (no secrets). */
export async function authorizeAgainstSandbox(options: SandboxAuthorizationOptions): Promise<GrantSummary> {
  const { config, logger } = options;
  const redirectUri = config.oauth?.redirectUri;
  if (redirectUri === undefined)
    throw new TypeError('authorizeAgainstSandbox needs a config with an oauth section');
  const oauth = await openOAuth(config, {
    backendFor: tokenStoreBackend(config, { logger }),
    logger,
    ...(options.env && { env: options.env }),
  });
  try {
    const listener = await CallbackListener.start({ redirectUri });
    try {
      let browserFailure: unknown = null;
      const grant = login({
        authorization: oauth.authorization(),
        listener,
        show: options.show ?? (() => undefined),
        open: (url) => {
          followAuthorization(url, options.sandboxCaPem, listener.certificatePem).catch((error: unknown) => {
            browserFailure = error;
            logger.error({ err: error }, 'sandbox authorization: the scripted browser failed');
          });
        },
        timeoutMs: 30_000,
        ...(options.signal && { signal: options.signal }),
      });
      try {
        return await grant;
      } catch (error) {
        throw browserFailure ?? error;
      }
    } finally {
      await listener.close();
    }
  } finally {
    await oauth.close();
  }
}
