/**
 * The sandbox: a faithful, fault-injecting simulator of the calls API (spec: OAuth 4.1/4.2/5, calls
 * 2.3/4.3/4.4), served over HTTPS with a certificate generated at start. Used by `calls-connector sandbox`,
 * by component and integration tests, by the demo and by the benchmarks.
 *
 * startSandbox() builds the data set from a seed, starts the server and returns a RunningSandbox: its
 * address, the CA to trust, the registered client, the location uids, a token shortcut and `admin`, the
 * in-process twin of the /_sandbox/ HTTP endpoint.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve as resolvePath } from 'node:path';
import { z } from 'zod';
import type { SandboxAdmin } from './admin/admin.js';
import { createClock } from './clock.js';
import { emptyStats, type SandboxClient, type SandboxContext } from './context.js';
import { toSingleCall } from './data/call-record.js';
import { generateData, resolveDataOptions, type DataOptions } from './data/generator.js';
import { DEFAULT_FAULTS, mergeFaults, type FaultSettings } from './faults/faults.js';
import { createResponder } from './http/respond.js';
import { createRequestHandler } from './http/router.js';
import { startLiveMode, type LiveRates } from './live.js';
import { GrantStore } from './oauth/grants.js';
import { createRandom } from './random.js';
import { loadOrGenerateTls, writeCaFile } from './tls.js';
import { WebhookDispatcher, type WebhookOptions } from './webhooks/dispatcher.js';

export type { SandboxAdmin } from './admin/admin.js';
export type { SandboxClient, SandboxStats } from './context.js';
export type { SandboxCall } from './data/call-record.js';
export type { DataOptions } from './data/generator.js';
export type { UpsertCallInput } from './data/store.js';
export type { FaultSettings } from './faults/faults.js';
export type { LiveRates } from './live.js';
export type {
  SandboxWebhooks,
  WebhookDeliveryRecord,
  WebhookOptions,
  WebhookRetry,
  WebhookStats,
  WebhookTarget,
} from './webhooks/dispatcher.js';
export type { CallEvent } from './webhooks/events.js';
export { WEBHOOK_FAULTS, type WebhookFault } from './webhooks/faults.js';
export {
  shapeSigner,
  WEBHOOK_SHAPES,
  type ShapeSigner,
  type SignedRequest,
  type WebhookShape,
} from './webhooks/shapes.js';
export { DEFAULT_FAULTS } from './faults/faults.js';
export { KNOWN_SCOPES } from './oauth/authorize.js';

export const DEFAULT_CLIENT: SandboxClient = Object.freeze({
  clientId: 'sandbox-client',
  clientSecret: 'sandbox-secret',
  redirectUri: 'https://127.0.0.1:8976/callback',
});

export interface SandboxOptions {
  /** Bind address; default 127.0.0.1. */
  host?: string;
  /** Default 0 (ephemeral); the CLI defaults to 8443. */
  port?: number;
  /**
   * Default: a self-signed certificate generated at start. false = plain HTTP (explicit only). With
   * `createIfMissing`, certFile and keyFile are generated when neither exists, and reused on the next start.
   */
  tls?: false | { certFile?: string; keyFile?: string; createIfMissing?: boolean };
  /**
   * Where to write the PEM clients should trust; default a temporary file removed on close. When it is
   * `tls.certFile`, that file is left as it is.
   */
  certOutFile?: string;
  client?: Partial<SandboxClient>;
  /** /oauth/authorize redirects straight away, without the login page (tests, demo). */
  autoApprove?: boolean;
  /** Each refresh retires the refresh token it used and returns a new one. */
  rotateRefreshTokens?: boolean;
  data?: DataOptions;
  live?: LiveRates | false;
  faults?: Partial<FaultSettings>;
  /** When set, /_sandbox/ requests must send it in X-Sandbox-Admin-Key. */
  adminKey?: string;
  /** Login of the sandbox user on the authorization page; default sandbox / sandbox. */
  user?: { username: string; password: string };
  /** call.* webhooks (README "Webhooks"): targets, secret, location in the payload, retries, faults. */
  webhooks?: WebhookOptions;
}

export interface RunningSandbox {
  /** e.g. https://127.0.0.1:PORT (no trailing slash). */
  baseUrl: string;
  /** PEM to trust; null with plain HTTP. */
  caCertPem: string | null;
  /** Path of that PEM on disk; null with plain HTTP. */
  caFile: string | null;
  client: SandboxClient;
  /** Location uids (UUIDs), in generation order. */
  locations: string[];
  /** Test/demo shortcut: mint a token pair without the browser flow. */
  issueTokens(opts?: { scopes?: string[]; locations?: string[] }): {
    accessToken: string;
    refreshToken: string;
  };
  admin: SandboxAdmin;
  close(): Promise<void>;
}

const upsertSchema = z
  .object({
    uid: z.string().min(1).optional(),
    locationUid: z.string().min(1).optional(),
    updatedAt: z.union([z.string(), z.number()]).optional(),
    customerPhoneNumber: z.string().nullable().optional(),
    startedAt: z.union([z.string(), z.number()]).optional(),
    endedAt: z.union([z.string(), z.number()]).optional(),
    isPrivate: z.boolean().optional(),
    conversationUid: z.string().nullable().optional(),
    thirdParty: z.boolean().optional(),
    representable: z.boolean().optional(),
  })
  .strict();

const importSchema = z
  .object({ locationUid: z.string().min(1), count: z.number().int().min(1).max(100_000) })
  .strict();

function validateClient(client: SandboxClient): void {
  if (client.clientId === '' || client.clientSecret === '')
    throw new RangeError('the sandbox client needs a client id and secret');
  let url: URL;
  try {
    url = new URL(client.redirectUri);
  } catch {
    throw new RangeError(`redirect uri is not a URL: ${client.redirectUri}`);
  }
  if (url.protocol !== 'https:') throw new RangeError('the redirect uri must be https (spec 4.1)');
}

export async function startSandbox(options: SandboxOptions = {}): Promise<RunningSandbox> {
  const host = options.host ?? '127.0.0.1';
  const port = options.port ?? 0;
  const client: SandboxClient = { ...DEFAULT_CLIENT, ...options.client };
  validateClient(client);
  const dataOptions = resolveDataOptions(options.data);
  const store = generateData(dataOptions);
  // Run-time writes must sort after the generated window, whatever the machine's date.
  const clock = createClock(Math.max(Date.now(), Date.parse(dataOptions.endAt) + 1000));
  const stats = emptyStats();
  const ctx: SandboxContext = {
    client,
    store,
    clock,
    stats,
    grants: new GrantStore(() => clock.nowMs(), {
      rotateRefreshTokens: options.rotateRefreshTokens ?? false,
    }),
    respond: createResponder((status) => {
      stats.byStatus[status] = (stats.byStatus[status] ?? 0) + 1;
    }),
    cursorKey: randomBytes(32),
    autoApprove: options.autoApprove ?? false,
    user: options.user ?? { username: 'sandbox', password: 'sandbox' },
    adminKey: options.adminKey ?? null,
    faults: mergeFaults(DEFAULT_FAULTS, options.faults ?? {}),
    faultSeq: 0,
    singleCallAttempts: new Map(),
    rateLimits: new Map(),
  };

  // Webhooks: every change of a listable call, to every registered target (faults from their own generator).
  const webhooks = new WebhookDispatcher(
    options.webhooks ?? {},
    () => clock.nowMs(),
    createRandom(dataOptions.seed ^ 0x4eb0),
  );
  store.onChange = (record, created) => {
    if (!record.thirdParty) webhooks.emit(created ? 'call.created' : 'call.updated', record);
  };

  // Live mode draws from its own seeded generator, kept across stop/start so a run stays reproducible.
  const liveRandom = createRandom(dataOptions.seed ^ 0x5eed);
  let stopLive: () => void = () => undefined;
  const setLive = (rates: LiveRates | false): void => {
    stopLive();
    stopLive = rates === false ? () => undefined : startLiveMode(ctx, liveRandom, rates);
  };

  const issueTokens: SandboxAdmin['issueTokens'] = (opts = {}) =>
    ctx.grants.issuePair({
      clientId: client.clientId,
      scopes: opts.scopes ?? ['read_phones'],
      locations: opts.locations ?? store.locations,
    });

  const admin: SandboxAdmin = {
    truth: (locationUid) => store.truth(locationUid).map(toSingleCall),
    upsertCall: (input) => toSingleCall(store.upsert(upsertSchema.parse(input), clock.nowMs())),
    importCalls: (input) => {
      const { locationUid, count } = importSchema.parse(input);
      const nowMs = clock.nowMs();
      return Array.from({ length: count }, () => toSingleCall(store.upsert({ locationUid }, nowMs)));
    },
    advanceClock: (ms) => clock.advance(ms),
    now: () => new Date(clock.nowMs()),
    revokeTokens: (opts = {}) => {
      ctx.grants.revokeAll(opts);
    },
    setFaults: (faults) => {
      ctx.faults = mergeFaults(ctx.faults, faults);
      // A new enforced rate starts with a full bucket.
      if (faults.rateLimit !== undefined) ctx.rateLimits.clear();
    },
    faults: () => structuredClone(ctx.faults),
    stats: () => structuredClone(stats),
    setLive,
    issueTokens,
    webhooks,
  };

  let server: Server;
  let caCertPem: string | null = null;
  let caFile: string | null = null;
  let tempDir: string | null = null;
  const handler = createRequestHandler(ctx, admin);
  if (options.tls === false) {
    server = createHttpServer({ keepAliveTimeout: 30_000 }, handler);
  } else {
    const material = await loadOrGenerateTls({ ...options.tls, host });
    server = createHttpsServer({ cert: material.cert, key: material.key, keepAliveTimeout: 30_000 }, handler);
    caCertPem = material.caPem;
    if (options.certOutFile !== undefined) {
      caFile = options.certOutFile;
    } else {
      tempDir = await mkdtemp(join(tmpdir(), 'calls-sandbox-'));
      caFile = join(tempDir, 'sandbox-ca.pem');
    }
    // The given certificate file is already the PEM to trust: never rewrite it.
    if (resolvePath(caFile) !== resolvePath(options.tls?.certFile ?? ''))
      await writeCaFile(caFile, caCertPem);
  }

  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    if (tempDir !== null) await rm(tempDir, { recursive: true, force: true });
    throw error;
  }
  const address = server.address() as AddressInfo;
  // A wildcard bind is reachable on loopback; the URL names an address a client can connect to.
  const urlAddress =
    address.address === '0.0.0.0' ? '127.0.0.1' : address.address === '::' ? '::1' : address.address;
  const hostForUrl = address.family === 'IPv6' ? `[${urlAddress}]` : urlAddress;
  const baseUrl = `${options.tls === false ? 'http' : 'https'}://${hostForUrl}:${address.port}`;

  setLive(options.live ?? false);
  let closed = false;
  return {
    baseUrl,
    caCertPem,
    caFile,
    client: { ...client },
    locations: store.locations,
    issueTokens,
    admin,
    close: async () => {
      if (closed) return;
      closed = true;
      stopLive();
      webhooks.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      if (tempDir !== null) await rm(tempDir, { recursive: true, force: true });
    },
  };
}
