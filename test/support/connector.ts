/**
 * End-to-end fixture: the real sandbox (HTTPS), the real Kafka broker and schema registry, and a connector
 * configuration pointing at both with fresh topic names. Values are decoded through the registry, as a
 * downstream consumer would.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import type { Kafka } from 'kafkajs';
import type { GrantSummary } from '../../src/auth/authorization.js';
import { parseConfig } from '../../src/config/load.js';
import { freeLoopbackPort } from '../../src/demo/free-port.js';
import { authorizeAgainstSandbox } from '../../src/demo/sandbox-authorization.js';
import { silentLogger } from '../../src/logging/logger.js';
import { ConnectorRuntime, type ConnectorRuntimeOptions } from '../../src/runtime/connector.js';
import type { ConnectorConfig } from '../../src/config/schema.js';
import { startSandbox, type RunningSandbox, type SandboxOptions } from '../../packages/sandbox/src/index.js';
import { readCommitted } from './kafka.js';
import { stackEndpoints, uniqueName } from './stack.js';

export interface PublishedCall {
  key: string;
  uid: string;
  locationUid: string;
  /** Microseconds since the epoch (Avro timestamp-micros, decoded without logical types). */
  updatedAt: number;
  updatedAtIso: string;
  customerPhoneNumber: string | null;
  isPrivate: boolean | null;
  startedAt: string | null;
  [field: string]: unknown;
}

export async function startTestSandbox(options: SandboxOptions = {}): Promise<RunningSandbox> {
  return startSandbox({ port: 0, ...options });
}

/** A connector config (as a parsed document) on the sandbox and the integration stack, with fresh topics. */
export function connectorDocument(
  sandbox: RunningSandbox,
  overrides: {
    api?: Record<string, unknown>;
    poll?: Record<string, unknown>;
    kafka?: Record<string, unknown>;
    metrics?: Record<string, unknown>;
    lanes?: Record<string, unknown>;
    webhooks?: Record<string, unknown>;
  } = {},
): Record<string, unknown> {
  const { brokers, registryUrl } = stackEndpoints();
  return {
    connector: { name: uniqueName('it-connector') },
    api: {
      baseUrl: sandbox.baseUrl,
      caFile: sandbox.caFile,
      pageSize: 40,
      requestsPerSecond: 500,
      ...overrides.api,
    },
    auth: { staticToken: sandbox.issueTokens().accessToken },
    sources: [{ locations: sandbox.locations }],
    kafka: {
      brokers,
      topic: uniqueName('calls'),
      offsetsTopic: uniqueName('offsets'),
      dlqTopic: uniqueName('dlq'),
      topicPartitions: 3,
      ...overrides.kafka,
    },
    schemaRegistry: { url: registryUrl },
    poll: { intervalMs: 200, maxLocationsInFlight: 3, shutdownTimeoutMs: 10_000, ...overrides.poll },
    metrics: { enabled: false, ...overrides.metrics },
    ...(overrides.lanes !== undefined && { lanes: overrides.lanes }),
    ...(overrides.webhooks !== undefined && { webhooks: overrides.webhooks }),
    logging: { level: 'warn', format: 'json' },
  };
}

export function connectorConfig(...args: Parameters<typeof connectorDocument>): ConnectorConfig {
  return parseConfig(connectorDocument(...args), {});
}

/** A sandbox whose auto-approving user authorizes one client through the real OAuth flow. */
export interface OAuthSandbox {
  sandbox: RunningSandbox;
  clientId: string;
  /** A free loopback https address: the callback listener of a login runs there. */
  redirectUri: string;
  /** The connector's environment: the client secret (SANDBOX_SECRET) and the token-store key (TOKEN_KEY). */
  env: { SANDBOX_SECRET: string; TOKEN_KEY: string };
}

export async function startOAuthSandbox(
  clientId: string,
  options: Omit<SandboxOptions, 'autoApprove' | 'client'> = {},
): Promise<OAuthSandbox> {
  const env = { SANDBOX_SECRET: `${clientId}-secret`, TOKEN_KEY: randomBytes(32).toString('base64') };
  const redirectUri = `https://127.0.0.1:${await freeLoopbackPort()}/callback`;
  const sandbox = await startTestSandbox({
    ...options,
    autoApprove: true,
    client: { clientId, clientSecret: env.SANDBOX_SECRET, redirectUri },
  });
  return { sandbox, clientId, redirectUri, env };
}

/**
 * A connector configuration on an OAuth sandbox: connectorDocument's with an `oauth` section (a file token
 * store in a fresh directory, `oauth` keys added) in place of the static token.
 */
export async function oauthConnectorConfig(
  oauth: OAuthSandbox,
  overrides: Parameters<typeof connectorDocument>[1] = {},
  oauthKeys: Record<string, unknown> = {},
): Promise<ConnectorConfig> {
  const dir = await mkdtemp(join(tmpdir(), 'calls-oauth-'));
  const { auth: _static, ...document } = connectorDocument(oauth.sandbox, overrides);
  return parseConfig(
    {
      ...document,
      oauth: {
        clientId: oauth.clientId,
        clientSecret: '${SANDBOX_SECRET}',
        redirectUri: oauth.redirectUri,
        keyEnv: 'TOKEN_KEY',
        store: { type: 'file', path: join(dir, 'tokens.enc') },
        ...oauthKeys,
      },
    },
    oauth.env,
  );
}

/** What `auth login` does, against the sandbox's auto-approving user: a new grant stored for `config`. */
export function loginToSandbox(oauth: OAuthSandbox, config: ConnectorConfig): Promise<GrantSummary> {
  return authorizeAgainstSandbox({
    config,
    sandboxCaPem: oauth.sandbox.caCertPem ?? '',
    logger: silentLogger(),
    env: oauth.env,
  });
}

/** A call version a test expects to find published: the sandbox's truth, or a version it replaced. */
export type ExpectedVersion = { uid: string; updatedAt: string } | PublishedCall;

/**
 * Every committed call of the topic, decoded through the registry, in offset order per partition.
 *
 * With `expected`, reads again until every expected version is visible, for at most `waitMs`, then returns
 * the last read whatever it holds (the caller's assertion reports what is missing). Why: a test learns that
 * the connector caught up from its offsets or metrics, but a commit returns before the transaction markers
 * reach the calls topic's partitions, so a read at once can stop short of the last page (CI read 683 of 705
 * versions once). Waiting for versions, not a count, is exact: older versions of an updated call cannot
 * stand in for its newest one, and a duplicate or a leaked version still shows in the result.
 */
export async function publishedCalls(
  kafka: Kafka,
  config: ConnectorConfig,
  expected: readonly ExpectedVersion[] = [],
  waitMs = 30_000,
): Promise<PublishedCall[]> {
  const registry = new SchemaRegistry({ host: config.schemaRegistry.url });
  const wanted = new Set(expected.map(versionId));
  const deadline = Date.now() + waitMs;
  for (;;) {
    const calls = await decodedCalls(kafka, registry, config.kafka.topic);
    const seen = new Set(calls.map(versionId));
    if ([...wanted].every((id) => seen.has(id)) || Date.now() > deadline) return calls;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function decodedCalls(kafka: Kafka, registry: SchemaRegistry, topic: string): Promise<PublishedCall[]> {
  const calls: PublishedCall[] = [];
  for (const record of await readCommitted(kafka, topic)) {
    if (record.value === null) continue;
    const value = (await registry.decode(record.value)) as PublishedCall;
    calls.push({ ...value, key: record.key?.toString('utf8') ?? '' });
  }
  return calls;
}

/** "uid@updatedAt": one call version, from the sandbox's truth (updatedAt) or a published record (updatedAtIso). */
export function versionId(call: ExpectedVersion): string {
  const iso = 'updatedAtIso' in call ? call.updatedAtIso : call.updatedAt;
  return `${call.uid}@${new Date(iso).toISOString()}`;
}

/** A connector started in-process and running in the background until `stop()` (graceful stop, then close). */
export interface RunningConnector {
  runtime: ConnectorRuntime;
  stop(): Promise<void>;
}

export async function runConnector(options: ConnectorRuntimeOptions): Promise<RunningConnector> {
  const runtime = await ConnectorRuntime.start(options);
  const controller = new AbortController();
  const running = runtime.run(controller.signal);
  return {
    runtime,
    stop: async () => {
      controller.abort();
      await running;
      await runtime.close();
    },
  };
}
