/**
 * The sandbox command's option mapping: its parsed flags and the environment into startSandbox options (the
 * client from a client file, flags and SANDBOX_CLIENT_SECRET; the fault and rate-limit settings; the admin key
 * a non-loopback --host requires). Pure but for reading the client file; the command (sandbox.ts) defines the
 * flags and runs the sandbox.
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { FaultSettings, SandboxClient, SandboxOptions, WebhookShape } from '@calls-connector/sandbox';
import { ConfigError } from '../../config/load.js';

/** Where the CA certificate is written without --cert-out or --cert. */
export const DEFAULT_CERT_OUT = '.calls-connector/sandbox-ca.pem';

/** The parsed flags (commander camel-cases them). */
export interface SandboxFlags {
  port: number;
  host: string;
  http?: boolean;
  cert?: string;
  key?: string;
  /** Absent: the --cert file when one is given (it is the certificate to trust), else DEFAULT_CERT_OUT. */
  certOut?: string;
  clientFile?: string;
  clientId?: string;
  redirectUri?: string;
  autoApprove?: boolean;
  rotateRefreshTokens?: boolean;
  seed: number;
  locations: number;
  calls: number;
  privateRatio?: number;
  thirdPartyRatio?: number;
  unrepresentableRatio?: number;
  groupCount?: number;
  groupSize?: number;
  locationsOut: string;
  liveUpdates?: number;
  liveCreates?: number;
  faultSeed?: number;
  faultLatencyMedian?: number;
  faultLatencyP99?: number;
  faultRateLimit?: number;
  faultRetryAfter?: number;
  faultRetryAfterForm?: FaultSettings['retryAfterForm'];
  faultServerError?: number;
  faultDrop?: number;
  faultMalformed?: number;
  faultCursorTtl?: number;
  faultTokenExpiry?: number;
  faultRefreshRevoke?: number;
  faultTokenEndpoint?: boolean;
  limitRps?: number;
  limitBurst?: number;
  limitPer?: 'sandbox' | 'token' | 'client';
  limitHeaders?: boolean | 'ietf' | 'x-ratelimit';
  limitResetForm?: 'delta-seconds' | 'epoch-seconds' | 'epoch-ms';
  limitQuota?: number;
  limitQuotaWindow?: number;
  /** Where call.* webhooks are sent (repeatable). */
  webhookTarget?: string[];
  /** Leave data.locationUid out of the webhook payloads, as the real API may. */
  webhookOmitLocation?: boolean;
  /** The sender shape webhooks are signed in (default standard-webhooks). */
  webhookShape?: WebhookShape;
  /** Attempts per delivery before it is given up (the sandbox's default: 5). */
  webhookRetryAttempts?: number;
  /** The wait before the first retry, doubling per attempt (default 250 ms)... */
  webhookRetryInitialDelay?: number;
  /** ...up to this (default 10 s). */
  webhookRetryMaxDelay?: number;
}

/** A client file: JSON `{"clientId", "redirectUri", "clientSecret"?}` (the secret may stay in the env). */
async function readClientFile(path: string): Promise<Partial<SandboxClient>> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    throw new ConfigError(`cannot read the client file ${path}`, [], error);
  }
  if (typeof parsed !== 'object' || parsed === null)
    throw new ConfigError(`the client file ${path} must hold a JSON object`);
  const out: Partial<SandboxClient> = {};
  for (const key of ['clientId', 'clientSecret', 'redirectUri'] as const) {
    const v = (parsed as Record<string, unknown>)[key];
    if (v !== undefined) {
      if (typeof v !== 'string') throw new ConfigError(`${key} in ${path} must be a string`);
      out[key] = v;
    }
  }
  return out;
}

function faultsFrom(f: SandboxFlags): Partial<FaultSettings> {
  const faults: Partial<FaultSettings> = {};
  if (f.faultSeed !== undefined) faults.seed = f.faultSeed;
  if (f.faultLatencyMedian !== undefined || f.faultLatencyP99 !== undefined) {
    const medianMs = f.faultLatencyMedian ?? 20;
    faults.latency = { medianMs, p99Ms: f.faultLatencyP99 ?? Math.max(medianMs, medianMs * 10) };
  }
  if (f.faultRateLimit !== undefined) faults.rateLimitRate = f.faultRateLimit;
  if (f.faultRetryAfter !== undefined) faults.retryAfterSeconds = f.faultRetryAfter;
  if (f.faultRetryAfterForm !== undefined) faults.retryAfterForm = f.faultRetryAfterForm;
  if (f.faultServerError !== undefined) faults.serverErrorRate = f.faultServerError;
  if (f.faultDrop !== undefined) faults.dropConnectionRate = f.faultDrop;
  if (f.faultMalformed !== undefined) faults.malformedJsonRate = f.faultMalformed;
  if (f.faultCursorTtl !== undefined) faults.cursorTtlMs = f.faultCursorTtl;
  if (f.faultTokenExpiry !== undefined) faults.accessTokenEarlyExpiryRate = f.faultTokenExpiry;
  if (f.faultRefreshRevoke !== undefined) faults.refreshTokenRevocationRate = f.faultRefreshRevoke;
  if (f.faultTokenEndpoint) faults.includeTokenEndpoint = true;
  if (f.limitRps !== undefined) {
    faults.rateLimit = {
      requestsPerSecond: f.limitRps,
      burst: f.limitBurst ?? Math.max(1, f.limitRps),
      per: f.limitPer ?? 'token',
      headers: f.limitHeaders ?? false,
      ...(f.limitResetForm === undefined ? {} : { resetForm: f.limitResetForm }),
      quota: f.limitQuota ?? null,
      ...(f.limitQuotaWindow === undefined ? {} : { quotaWindowSeconds: f.limitQuotaWindow }),
    };
  }
  return faults;
}

type WebhookRetry = NonNullable<NonNullable<SandboxOptions['webhooks']>['retry']>;

/** The webhook sender's retry flags given (the sandbox's defaults for the others); undefined: none given. */
function webhookRetry(f: SandboxFlags): WebhookRetry | undefined {
  const retry: WebhookRetry = {
    ...(f.webhookRetryAttempts !== undefined && { maxAttempts: f.webhookRetryAttempts }),
    ...(f.webhookRetryInitialDelay !== undefined && { initialDelayMs: f.webhookRetryInitialDelay }),
    ...(f.webhookRetryMaxDelay !== undefined && { maxDelayMs: f.webhookRetryMaxDelay }),
  };
  return Object.keys(retry).length === 0 ? undefined : retry;
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/**
 * Builds startSandbox options from the flags and the environment (exported for tests). Refuses a
 * non-loopback --host without SANDBOX_ADMIN_KEY.
 */
export async function sandboxOptionsFrom(f: SandboxFlags, env: NodeJS.ProcessEnv): Promise<SandboxOptions> {
  const client: Partial<SandboxClient> = f.clientFile === undefined ? {} : await readClientFile(f.clientFile);
  if (f.clientId !== undefined) client.clientId = f.clientId;
  if (f.redirectUri !== undefined) client.redirectUri = f.redirectUri;
  const secret = env.SANDBOX_CLIENT_SECRET;
  if (secret !== undefined && secret !== '') client.clientSecret = secret;
  if ((f.cert === undefined) !== (f.key === undefined)) throw new ConfigError('--cert and --key go together');
  const adminKey = env.SANDBOX_ADMIN_KEY;
  if (!isLoopback(f.host) && (adminKey === undefined || adminKey === '')) {
    // Reachable from the network, /_sandbox/ would let anyone mint tokens, inject calls the connector
    // publishes and read private numbers (/_sandbox/truth).
    throw new ConfigError(
      `--host ${f.host} is not a loopback address: set SANDBOX_ADMIN_KEY (e.g. openssl rand -hex 16) so the ` +
        'admin API (/_sandbox/) asks for it, or bind 127.0.0.1',
    );
  }
  const retry = webhookRetry(f);
  return {
    host: f.host,
    port: f.port,
    tls: f.http
      ? false
      : f.cert !== undefined && f.key !== undefined
        ? { certFile: f.cert, keyFile: f.key }
        : {},
    certOutFile: resolve(f.certOut ?? f.cert ?? DEFAULT_CERT_OUT),
    client,
    autoApprove: f.autoApprove ?? false,
    rotateRefreshTokens: f.rotateRefreshTokens ?? false,
    data: {
      seed: f.seed,
      locations: f.locations,
      callsPerLocation: f.calls,
      ...(f.privateRatio === undefined ? {} : { privateRatio: f.privateRatio }),
      ...(f.thirdPartyRatio === undefined ? {} : { thirdPartyRatio: f.thirdPartyRatio }),
      ...(f.unrepresentableRatio === undefined ? {} : { unrepresentableRatio: f.unrepresentableRatio }),
      ...(f.groupCount === undefined && f.groupSize === undefined
        ? {}
        : { sameInstantGroups: { count: f.groupCount ?? 1, size: f.groupSize ?? 120 } }),
    },
    live:
      (f.liveUpdates ?? 0) > 0 || (f.liveCreates ?? 0) > 0
        ? { updatesPerSecond: f.liveUpdates ?? 0, createsPerSecond: f.liveCreates ?? 0 }
        : false,
    faults: faultsFrom(f),
    ...(adminKey !== undefined && adminKey !== '' ? { adminKey } : {}),
    webhooks: {
      targets: f.webhookTarget ?? [],
      includeLocation: f.webhookOmitLocation !== true,
      ...(f.webhookShape !== undefined && { shape: f.webhookShape }),
      ...(retry && { retry }),
      ...(env.SANDBOX_WEBHOOK_SECRET ? { secret: env.SANDBOX_WEBHOOK_SECRET } : {}),
    },
  };
}
