/** `kafka`: the brokers and how to reach them (TLS, SASL), the topics, transactions and producer settings. */
import { z } from 'zod';
import { durationMs } from '../duration.js';

const sslSchema = z.union(
  [
    z.boolean(),
    z
      .object({
        caFile: z.string().optional(),
        certFile: z.string().optional(),
        keyFile: z.string().optional(),
        rejectUnauthorized: z.boolean().default(true),
      })
      .strict(),
  ],
  { error: 'expected true, false, or { caFile, certFile, keyFile, rejectUnauthorized }' },
);

/** Values of kafka.compression (src/kafka/client/compression.ts registers the codecs). */
export const KAFKA_COMPRESSIONS = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const;

/** SASL/PLAIN and SCRAM: a username and password the brokers know. */
const passwordSaslSchema = z
  .object({
    mechanism: z.enum(['plain', 'scram-sha-256', 'scram-sha-512']),
    username: z.string().min(1),
    password: z.string().min(1),
  })
  .strict();

/**
 * SASL/OAUTHBEARER with tokens from an OAuth 2.0 token endpoint, client credentials grant (the OIDC login of
 * KIP-768, as managed Kafka services offer it; Kafka's sasl.oauthbearer.token.endpoint.url). Tokens are
 * cached and fetched again once 80 % of their lifetime has passed. See docs/kafka-security.md.
 */
const oauthBearerSaslSchema = z
  .object({
    mechanism: z.literal('oauthbearer'),
    /** The identity provider's token endpoint, e.g. https://login.example.com/oauth2/token. */
    tokenEndpointUrl: z.url({
      protocol: /^https?$/,
      error:
        'expected the https:// URL of the OAuth token endpoint, e.g. https://idp.example.com/oauth2/token',
    }),
    clientId: z.string().min(1),
    /** Use `${ENV}` interpolation or clientSecretFile; never put the secret itself in a committed file. */
    clientSecret: z.string().min(1).optional(),
    clientSecretFile: z.string().min(1).optional(),
    /** Sent as `scope` when set (space-separated, as the provider expects). */
    scope: z.string().min(1).optional(),
    /** SASL extensions sent with the token, e.g. Confluent Cloud's logicalCluster and identityPoolId. */
    extensions: z
      .record(
        z.string().regex(/^[A-Za-z]+$/, 'an extension name is letters only (RFC 7628)'),
        z.string().regex(/^[\x20-\x7E\t\r\n]*$/, 'an extension value is printable ASCII (RFC 7628)'),
      )
      .refine((extensions) => !('auth' in extensions), 'the extension name `auth` is reserved (RFC 7628)')
      .optional(),
    /** Extra CA bundle (PEM) trusted for an https:// token endpoint, besides the system's. */
    caFile: z.string().min(1).optional(),
    /** One token request must answer within this time. */
    requestTimeoutMs: durationMs(100).default(10_000),
  })
  .strict()
  .refine((o) => o.clientSecret !== undefined || o.clientSecretFile !== undefined, {
    message: 'set kafka.sasl.clientSecret (from ${ENV}) or kafka.sasl.clientSecretFile',
    path: ['clientSecret'],
  });

/**
 * `mechanism` is case-insensitive: `PLAIN`, `SCRAM-SHA-512` and `OAUTHBEARER` are how Kafka's own configs
 * spell them.
 */
const saslSchema = z.preprocess(
  (value) =>
    value !== null && typeof value === 'object' && !Array.isArray(value) && 'mechanism' in value
      ? {
          ...value,
          mechanism: typeof value.mechanism === 'string' ? value.mechanism.toLowerCase() : value.mechanism,
        }
      : value,
  z.discriminatedUnion('mechanism', [passwordSaslSchema, oauthBearerSaslSchema]),
);

export const kafkaSchema = z
  .object({
    brokers: z.array(z.string().regex(/^[^:\s]+:\d+$/, 'a broker is host:port')).min(1),
    clientId: z.string().min(1).optional(),
    ssl: sslSchema.optional(),
    sasl: saslSchema.optional(),
    topic: z.string().min(1).default('calls'),
    offsetsTopic: z.string().min(1).default('calls-connector-offsets'),
    /**
     * Partitions of the offsets topic when the connector creates it: the most instances that can share the
     * locations in `connector.mode: distributed`. Never change it after creation (a location's partition
     * would move); an existing topic keeps its count.
     */
    offsetsTopicPartitions: z.number().int().min(1).max(1000).default(24),
    /**
     * Distributed mode: the instances' consumer group session timeout (>= the broker's
     * group.min.session.timeout.ms, 6 s on a stock broker). A killed instance's locations wait this long before they
     * are handed over, so the default is that minimum, as single mode's presence session is.
     */
    groupSessionTimeoutMs: durationMs(1000).default(6_000),
    /** Distributed mode: the group heartbeat interval, a third of the session timeout. */
    groupHeartbeatIntervalMs: durationMs(100).default(2_000),
    /** Distributed mode: how long a rebalance waits for every instance to rejoin. */
    groupRebalanceTimeoutMs: durationMs(1000).default(60_000),
    dlqTopic: z.string().min(1).default('calls-connector-dlq'),
    /** true: records and offset in one transaction (exactly once). false: idempotent producer, at least once. */
    exactlyOnce: z.boolean().default(true),
    /** Create missing topics at start (needs the CreateTopics ACL). */
    createTopics: z.boolean().default(true),
    topicPartitions: z.number().int().min(1).default(6),
    replicationFactor: z.number().int().min(1).default(1),
    /** Record key: the uid as a UTF-8 string, or Avro-encoded under `<topic>-key`. */
    keyFormat: z.enum(['string', 'avro']).default('string'),
    /** A transaction the coordinator aborts if it is not committed in time (<= the broker's transaction.max.timeout.ms). */
    transactionTimeoutMs: durationMs(1000).default(60_000),
    /** Group commit: pages that queue up while a transaction is in flight share the next one, at most this many. */
    maxPagesPerTransaction: z.number().int().min(1).max(10_000).default(50),
    /**
     * ... and at most about this many bytes (keys + values). kafkajs sends one record batch per partition
     * per request, and the broker refuses a batch over its message.max.bytes (1 MiB by default), so keep
     * this below that limit of the smallest topic. A single page is always sent whole.
     */
    maxBytesPerTransaction: z.number().int().min(10_000).default(800_000),
    /**
     * A fenced producer is rebuilt (single mode) only when the group `<name>-instances` shows no other
     * instance, and at most this many times within fencedWindowMs; once more, it stands by. With another
     * instance of this connector.name running, it always stands by (the newest wins; never fenced back).
     */
    fencedRebuildLimit: z.number().int().min(0).max(100).default(3),
    fencedWindowMs: durationMs(1000).default(600_000),
    /** Reading the offsets topic to its end at start must finish within this time. */
    offsetsLoadTimeoutMs: durationMs(1000).default(120_000),
    // ---- Connect/Debezium conventions: gone calls, heartbeats, the topic's cleanup policy ----
    /**
     * A listed call whose GET /v4/calls/{uid} answers not found (404/410): false (default) publishes it
     * unenriched, customer number redacted; true publishes a tombstone (key uid, null value) instead, so
     * compaction removes the call from the topic. See docs/operations.md ("Calls the API reports gone").
     */
    tombstoneGoneCalls: z.boolean().default(false),
    /** Heartbeat records per location every this often (0: off), to heartbeatTopic; see docs/operations.md. */
    heartbeatIntervalMs: durationMs().default(0),
    heartbeatTopic: z.string().min(1).default('calls-connector-heartbeats'),
    /**
     * cleanup.policy of the calls topic when the connector creates it. compact: the topic keeps the
     * latest version of every call (the complete current state; older versions, and the customer numbers
     * of calls that later turned private, are compacted away). delete: a time-limited change log.
     */
    topicCleanupPolicy: z.enum(['compact', 'delete', 'compact,delete']).default('compact'),
    // ---- what a Connect/Confluent user expects to set on a producer and its topics ----
    /**
     * Compression of the record batches the connector writes (Kafka's compression.type of a producer):
     * none, gzip, snappy, lz4 or zstd (zstd needs Node >= 22.15). Case-insensitive. The topics keep the
     * producer's codec unless their own compression.type says otherwise. See docs/kafka-security.md.
     */
    compression: z
      .preprocess(
        (value) => (typeof value === 'string' ? value.toLowerCase() : value),
        z.enum(KAFKA_COMPRESSIONS, { error: `expected one of ${KAFKA_COMPRESSIONS.join(', ')}` }),
      )
      .default('none'),
  })
  .strict();

export type KafkaConfig = z.infer<typeof kafkaSchema>;
