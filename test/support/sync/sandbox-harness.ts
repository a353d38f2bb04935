/**
 * Wires the real API client to a running sandbox (HTTPS, its CA trusted through api.caFile), plus the
 * sync engine over an in-memory sink, for component tests. No Kafka.
 */
import { CallsApiClient } from '../../../src/api/calls-api-client.js';
import { HttpTransport } from '../../../src/api/http-transport.js';
import type { TokenProvider } from '../../../src/api/token-provider.js';
import { apiSchema, type ApiConfig, type PrivacyPolicy } from '../../../src/config/schema.js';
import { ConnectorError } from '../../../src/errors/index.js';
import { silentLogger } from '../../../src/logging/logger.js';
import { type ConnectorMetrics } from '../../../src/metrics/metrics.js';
import { testMetrics } from '../metrics.js';
import { afterAll, beforeAll } from 'vitest';
import {
  startSandbox,
  type RunningSandbox,
  type SandboxCall,
  type SandboxOptions,
} from '../../../packages/sandbox/src/index.js';
import { systemClock } from '../../../src/time/clock.js';
import { Enricher } from '../../../src/sync/location/enricher.js';
import type { LaneSettings } from '../../../src/sync/lanes/lanes.js';
import { LocationSync } from '../../../src/sync/location/location-sync.js';
import { EMPTY_OFFSET, type Call, type LocationOffset } from '../../../src/sync/model.js';
import { InMemorySink } from './in-memory-sink.js';
import { testFingerprints } from './fingerprints.js';

/** Tokens minted by the sandbox; a refresh mints a new pair (like a successful OAuth refresh). */
export class SandboxTokens implements TokenProvider {
  private current: string;
  refreshes = 0;
  constructor(
    private readonly sandbox: RunningSandbox,
    private readonly scopes: string[] = ['read_phones'],
  ) {
    this.current = sandbox.issueTokens({ scopes }).accessToken;
  }
  async accessToken(): Promise<string> {
    return this.current;
  }
  async refreshAfterRejection(rejected: string): Promise<string> {
    if (rejected === this.current) {
      this.refreshes += 1;
      this.current = this.sandbox.issueTokens({ scopes: this.scopes }).accessToken;
    }
    return this.current;
  }
}

/** Test-speed retry numbers: short backoff, many attempts (fault rates are high in tests). */
const TEST_RETRY = { initialDelayMs: 5, maxDelayMs: 50, maxAttempts: 12 };

export interface SandboxClientHarness {
  api: ApiConfig;
  client: CallsApiClient;
  transport: HttpTransport;
  metrics: ConnectorMetrics;
  tokens: SandboxTokens;
  close(): Promise<void>;
}

export async function sandboxClient(
  sandbox: RunningSandbox,
  overrides: Partial<Omit<ApiConfig, 'retry'>> & { retry?: Partial<ApiConfig['retry']> } = {},
  tokens: SandboxTokens = new SandboxTokens(sandbox),
): Promise<SandboxClientHarness> {
  const { retry, ...rest } = overrides;
  const api = apiSchema.parse({
    baseUrl: sandbox.baseUrl,
    caFile: sandbox.caFile ?? undefined,
    requestsPerSecond: 1000,
    maxConcurrency: 16,
    ...rest,
    retry: { ...TEST_RETRY, ...retry },
  });
  const metrics = testMetrics();
  const transport = await HttpTransport.fromConfig(api, metrics);
  const client = new CallsApiClient({
    http: transport,
    tokens,
    settings: api,
    metrics,
    logger: silentLogger(),
  });
  return { api, client, transport, metrics, tokens, close: () => transport.close() };
}

export type SandboxClientOverrides = Parameters<typeof sandboxClient>[1];

/** A describe block's sandbox and the client over it (sandboxSuite); both set once its beforeAll ran. */
export interface SandboxSuite {
  sandbox: RunningSandbox;
  harness: SandboxClientHarness;
}

/**
 * The sandbox set-up of a describe block that drives the sync engine against the sandbox over HTTPS: starts the
 * sandbox and a client harness over it (sandboxClient) in its beforeAll, closes the client then the sandbox in
 * its afterAll. Call it in the describe's body; the tests read `suite.sandbox` and `suite.harness`.
 */
export function sandboxSuite(sandbox: SandboxOptions, client: SandboxClientOverrides = {}): SandboxSuite {
  const suite = {} as SandboxSuite;
  beforeAll(async () => {
    suite.sandbox = await startSandbox(sandbox);
    suite.harness = await sandboxClient(suite.sandbox, client);
  });
  afterAll(async () => {
    await suite.harness?.close();
    await suite.sandbox?.close();
  });
  return suite;
}

export function locationSync(
  harness: SandboxClientHarness,
  locationUid: string,
  sink: InMemorySink,
  options: {
    start?: LocationOffset;
    privacy?: PrivacyPolicy;
    boundaryCap?: number;
    lanes?: LaneSettings;
  } = {},
): LocationSync {
  return new LocationSync({
    locationUid,
    startOffset: options.start ?? sink.offsets.get(locationUid) ?? EMPTY_OFFSET,
    api: harness.client,
    enricher: new Enricher({
      api: harness.client,
      enabled: harness.api.enrich,
      concurrency: harness.api.enrichConcurrency,
    }),
    sink,
    metrics: harness.metrics,
    logger: silentLogger(),
    settings: {
      pageSize: harness.api.pageSize,
      startSince: null,
      boundaryCap: options.boundaryCap ?? 5_000,
      privacy: options.privacy ?? 'redact-unless-public',
      fingerprints: testFingerprints,
      commitRetry: harness.api.retry,
      ...(options.lanes !== undefined && { lanes: options.lanes }),
    },
    clock: systemClock,
  });
}

/**
 * Runs a traversal to completion, resuming after retriable errors the way the scheduler does (without its
 * backoff); gives up after `maxFailures`. Returns the retriable error codes met.
 */
export async function traverseResiliently(sync: LocationSync, maxFailures = 20): Promise<string[]> {
  const failures: string[] = [];
  for (;;) {
    try {
      if ((await sync.runPage()).complete) return failures;
    } catch (error) {
      if (!(error instanceof ConnectorError) || !error.retriable || failures.length >= maxFailures)
        throw error;
      failures.push(error.code);
    }
  }
}

/** What the connector must publish for a sandbox call under redact-unless-public with enrichment on. */
export function expectedCall(truth: SandboxCall): Call {
  const redacted = truth.isPrivate && truth.customerPhoneNumber !== null;
  return {
    uid: truth.uid,
    locationUid: truth.locationUid,
    updatedAt: truth.updatedAt,
    locationPhoneNumber: truth.locationPhoneNumber,
    customerPhoneNumber: truth.isPrivate ? null : truth.customerPhoneNumber,
    startedAt: truth.startedAt,
    endedAt: truth.endedAt,
    isPrivate: truth.isPrivate,
    conversationUid: truth.conversationUid,
    enriched: true,
    customerPhoneNumberRedacted: redacted,
  };
}

/** Sorts calls the way truth() is sorted, so lists compare directly. */
export function byUpdatedAtThenUid(a: Call | SandboxCall, b: Call | SandboxCall): number {
  return a.updatedAt < b.updatedAt
    ? -1
    : a.updatedAt > b.updatedAt
      ? 1
      : a.uid < b.uid
        ? -1
        : a.uid > b.uid
          ? 1
          : 0;
}
