/**
 * Component-test fixture for the OAuth module: the sandbox over HTTPS (auto-approve), a callback listener on
 * an ephemeral loopback port registered as the client's redirect_uri, a validated configuration pointing at
 * both, an encrypted file token store in a temp directory, and a scripted "browser".
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import type { GrantSummary } from '../../../src/auth/authorization.js';
import { CallbackListener } from '../../../src/auth/callback-listener.js';
import { login } from '../../../src/auth/login.js';
import { openOAuth, type OAuthDependencies, type OAuthRuntime } from '../../../src/auth/oauth-runtime.js';
import { tokenStoreBackend } from '../../../src/runtime/token-store-backend.js';
import { parseConfig } from '../../../src/config/load.js';
import type { ConnectorConfig } from '../../../src/config/schema.js';
import {
  startSandbox,
  type RunningSandbox,
  type SandboxOptions,
} from '../../../packages/sandbox/src/index.js';

export const KEY_ENV = 'TEST_TOKEN_KEY';
export const SECRET_ENV = 'TEST_CLIENT_SECRET';

export interface OAuthFixture {
  sandbox: RunningSandbox;
  listener: CallbackListener;
  redirectUri: string;
  dir: string;
  storePath: string;
  /** Environment holding the store key and the client secret (as `${ENV}` references in the config). */
  env: NodeJS.ProcessEnv;
  config: ConnectorConfig;
  /** A fresh runtime over the same store (a process start). */
  open(deps?: Partial<OAuthDependencies>): Promise<OAuthRuntime>;
  /** The person's browser: follows the authorize URL to the sandbox, then its redirect to the listener. */
  browse(authorizeUrl: string): Promise<{ redirect: URL; status: number }>;
  /** `auth login` with the scripted browser: authorizes `grant` and stores it. */
  login(oauth: OAuthRuntime, grant?: string): Promise<GrantSummary>;
  /** GET a listing page with `token`; returns the HTTP status. */
  listCalls(token: string): Promise<number>;
  close(): Promise<void>;
}

export async function startOAuthFixture(
  options: { sandbox?: SandboxOptions; oauth?: Record<string, unknown>; clientSecret?: string } = {},
): Promise<OAuthFixture> {
  const dir = await mkdtemp(join(tmpdir(), 'oauth-'));
  const listener = await CallbackListener.start({
    redirectUri: 'https://127.0.0.1/callback',
    listen: { host: '127.0.0.1', port: 0 },
  });
  const redirectUri = `https://127.0.0.1:${listener.port}/callback`;
  const sandbox = await startSandbox({
    autoApprove: true,
    rotateRefreshTokens: true,
    data: { locations: 2, callsPerLocation: 5 },
    ...options.sandbox,
    client: { redirectUri, ...options.sandbox?.client },
  });
  const storePath = join(dir, 'store', 'tokens.enc');
  const env: NodeJS.ProcessEnv = {
    [KEY_ENV]: randomBytes(32).toString('base64'),
    [SECRET_ENV]: options.clientSecret ?? sandbox.client.clientSecret,
  };
  const config = parseConfig(
    {
      connector: { name: 'oauth-test' },
      api: { baseUrl: sandbox.baseUrl, caFile: sandbox.caFile },
      oauth: {
        clientId: sandbox.client.clientId,
        clientSecret: `\${${SECRET_ENV}}`,
        redirectUri,
        scopes: ['read_phones'],
        store: { type: 'file', path: storePath },
        keyEnv: KEY_ENV,
        rotationGraceMs: 0,
        ...options.oauth,
      },
      sources: [{ locations: [sandbox.locations[0]] }],
      kafka: { brokers: ['127.0.0.1:9'] },
      schemaRegistry: { url: 'http://127.0.0.1:9' },
    },
    env,
  );
  const toSandbox = new Agent({ connect: { ca: sandbox.caCertPem ?? undefined } });
  const toListener = new Agent({ connect: { ca: listener.certificatePem } });
  const runtimes: OAuthRuntime[] = [];
  async function browse(authorizeUrl: string): Promise<{ redirect: URL; status: number }> {
    const approved = await request(authorizeUrl, { dispatcher: toSandbox });
    await approved.body.dump();
    const location = approved.headers.location;
    if (approved.statusCode !== 302 || typeof location !== 'string') {
      throw new Error(`authorize answered ${approved.statusCode} without a redirect`);
    }
    const redirect = new URL(location);
    const landed = await request(redirect, { dispatcher: toListener });
    await landed.body.dump();
    return { redirect, status: landed.statusCode };
  }
  return {
    sandbox,
    listener,
    redirectUri,
    dir,
    storePath,
    env,
    config,
    async open(deps = {}) {
      const runtime = await openOAuth(config, {
        env,
        backendFor: tokenStoreBackend(config, { clock: deps.clock }),
        ...deps,
      });
      runtimes.push(runtime);
      return runtime;
    },
    browse,
    async login(oauth, grant) {
      return login({
        authorization: oauth.authorization(grant),
        listener,
        show: () => {},
        open: (url) => void browse(url),
        timeoutMs: 10_000,
      });
    },
    async listCalls(token) {
      const response = await request(
        `${sandbox.baseUrl}/v4/calls?locationUid=${sandbox.locations[0]}&limit=1`,
        {
          dispatcher: toSandbox,
          headers: { authorization: `Bearer ${token}` },
        },
      );
      await response.body.dump();
      return response.statusCode;
    },
    async close() {
      for (const runtime of runtimes) await runtime.close();
      await Promise.all([listener.close(), sandbox.close(), toSandbox.close(), toListener.close()]);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
