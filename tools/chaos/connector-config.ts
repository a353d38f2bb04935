/**
 * The configuration file each connector process of a chaos run gets (and `auth login`, as process 0): the
 * run's sandbox, topics and timeouts, its two grants, and a metrics port of its own.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { GRANTS, type GrantName } from './fault-checks.js';
import { CONNECTOR_NAME, PORTS, TOPICS } from './run-names.js';
import { TIMEOUTS, type Profile } from './schedule.js';
import type { StackEndpoints } from './stack.js';
import { RECONCILE_INTERVAL_MS } from './webhook-attribution.js';

/**
 * How often the connector polls each location: webhooks.reconcileIntervalMs of the chaos config (with webhooks
 * on it replaces poll.intervalMs, which the config leaves out). Long beside a nudged poll (about a second), so
 * that a change found by reconciliation is told from one a nudge brought (webhook-attribution.ts).
 */
export const POLL_INTERVAL_MS = RECONCILE_INTERVAL_MS;

/**
 * The live demand the hidden-limit faults are set against (fault-checks.ts limitBelowLiveDemand,
 * limitAboveLiveDemand): a listing of each location every 2 s (the interval the chaos config polled at before
 * webhooks), which is also about what the nudges of the live changes ask for (a listing and a single-call
 * request per change).
 */
export const LIVE_DEMAND_INTERVAL_MS = 2000;

/** The environment variable holding the run's webhook secret (the sandbox signs with it too). */
export const WEBHOOK_SECRET_ENV = 'CHAOS_WEBHOOK_SECRET';
/** api.requestsPerSecond of the chaos config: the API budget the connector is told, where no fault limits it. */
export const REQUESTS_PER_SECOND = 1500;

export interface ConnectorConfigSettings {
  runDir: string;
  distributed: boolean;
  exactlyOnce: boolean;
  profile: Pick<Profile, 'stoppedRetryInitialDelayMs'>;
  endpoints: StackEndpoints;
  grantLocations: Readonly<Record<GrantName, readonly string[]>>;
}

/** Writes the config of process number `instance` (0: `auth login`) with its metrics port; returns the file. */
export function writeConnectorConfig(
  settings: ConnectorConfigSettings,
  instance: number,
  metricsPort = PORTS.metricsBase + 39,
): string {
  const { runDir, distributed, exactlyOnce, profile, endpoints, grantLocations } = settings;
  const file = join(runDir, `connector-${instance}.yaml`);
  const document = {
    connector: { name: CONNECTOR_NAME, mode: distributed ? 'distributed' : 'single' },
    api: {
      baseUrl: `https://127.0.0.1:${PORTS.sandbox}`,
      caFile: join(runDir, 'sandbox-ca.pem'),
      pageSize: 100,
      requestsPerSecond: REQUESTS_PER_SECOND,
      maxConcurrency: 32,
      enrichConcurrency: 16,
      requestTimeoutMs: 10_000,
      retry: {
        maxAttempts: 8,
        initialDelayMs: 100,
        maxDelayMs: 5000,
        maxRetryAfterMs: TIMEOUTS.maxRetryAfterMs,
      },
    },
    oauth: {
      clientId: 'chaos-client',
      clientSecret: '${CHAOS_CLIENT_SECRET}',
      redirectUri: `https://127.0.0.1:${PORTS.callback}/callback`,
      store: { type: 'kafka', topic: TOPICS.tokens },
      keyEnv: 'CHAOS_TOKEN_KEY',
    },
    // Two grants divide the locations, so that one grant's quota can be spent while the other goes on.
    sources: GRANTS.map((grant) => ({ grant, locations: grantLocations[grant] })),
    kafka: {
      brokers: [endpoints.brokers],
      topic: TOPICS.calls,
      offsetsTopic: TOPICS.offsets,
      dlqTopic: TOPICS.dlq,
      exactlyOnce,
      createTopics: true,
      topicPartitions: 6,
      transactionTimeoutMs: TIMEOUTS.transactionMs,
      // Distributed mode: 6 partitions share the locations among the instances; a short session timeout
      // moves a dead or paused instance's partitions after 10 s.
      ...(distributed && {
        offsetsTopicPartitions: 6,
        groupSessionTimeoutMs: TIMEOUTS.sessionMs,
        groupHeartbeatIntervalMs: 1000,
      }),
    },
    schemaRegistry: { url: endpoints.registryUrl },
    // Deliveries come through the run's ingress (webhook-ingress.ts) to each process's receiver, on its metrics
    // port plus PORTS.webhookOffset; the polls reconcile every RECONCILE_INTERVAL_MS.
    webhooks: {
      enabled: true,
      host: '127.0.0.1',
      port: metricsPort + PORTS.webhookOffset,
      path: '/webhooks/calls',
      signature: { scheme: 'standard-webhooks', secretEnv: [WEBHOOK_SECRET_ENV] },
      reconcileIntervalMs: POLL_INTERVAL_MS,
    },
    poll: {
      maxLocationsInFlight: 16,
      shutdownTimeoutMs: 10_000,
      ...(profile.stoppedRetryInitialDelayMs !== undefined && {
        stoppedRetry: { initialDelayMs: profile.stoppedRetryInitialDelayMs },
      }),
    },
    metrics: { host: '127.0.0.1', port: metricsPort, perLocationLabels: false },
    // CHAOS_LOG_LEVEL=debug keeps every traversal's start and page in the run folder's logs (to replay a seed).
    logging: { level: process.env.CHAOS_LOG_LEVEL === 'debug' ? 'debug' : 'info', format: 'json' },
  };
  writeFileSync(file, stringify(document));
  return file;
}
