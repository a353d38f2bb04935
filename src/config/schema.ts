/**
 * The connector's configuration: one schema, with every default in one place (but for the stopped-location
 * backoff's, which the sync core owns, sync/healing.ts: the core imports no configuration).
 *
 * Keys the calls API spec marks "not shown" (listing path, items field, cursor field, token header,
 * error codes) are configuration here, with the defaults our sandbox and the known API use.
 * docs/configuration.md is generated from this file (`npm run docs:config`; describe a new key in
 * tools/docs/config-descriptions.ts): a unit test fails while the two differ.
 */
import { z } from 'zod';
import { DEFAULT_STOPPED_RETRY } from '../sync/healing.js';

const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?$/;
const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/**
 * A `*Ms` key's value in milliseconds: a number, or a string with a unit (`250ms`, `60s`, `5m`, `1h`, `1d`;
 * digits alone are milliseconds, as `${ENV}` interpolation gives strings). Anything else is left for the
 * number schema to reject.
 */
export function parseDurationMs(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  const match = DURATION.exec(value.trim());
  if (match === null) return value;
  const unit = (match[2] ?? 'ms') as keyof typeof UNIT_MS;
  return Math.round(Number(match[1]) * UNIT_MS[unit]);
}

const durationMs = (min = 0) => z.preprocess(parseDurationMs, z.number().int().min(min));

export const retrySchema = z
  .object({
    /** Total attempts for one request, the first included. */
    maxAttempts: z.number().int().min(1).max(100).default(8),
    /** Backoff before retry n is uniform in [0, min(maxDelayMs, initialDelayMs * multiplier^(n-1))] (full jitter). */
    initialDelayMs: durationMs().default(250),
    maxDelayMs: durationMs().default(30_000),
    multiplier: z.number().min(1).max(10).default(2),
    /** Statuses worth another try. 401 is handled apart (one refresh, then retry once). */
    statuses: z.array(z.number().int().min(400).max(599)).default([408, 425, 429, 500, 502, 503, 504]),
    /**
     * A Retry-After longer than this: a 429 (or a 503 with Retry-After) parks the limiter scope as throttled
     * until then (status, metric, alert; it resumes by itself); any other status gives up the request.
     */
    maxRetryAfterMs: durationMs().default(300_000),
  })
  .strict()
  .prefault({});

/**
 * The learned rate limit (api/rate-limit/): each scope starts at api.requestsPerSecond and adapts (AIMD)
 * within [floorPerSecond, ceilingPerSecond], or stays just under a rate the API announces in its headers.
 */
const rateLimitSchema = z
  .object({
    /** One limiter per OAuth grant (APIs usually limit per access token), or one for the whole process. */
    scope: z.enum(['grant', 'global']).default('grant'),
    floorPerSecond: z.number().positive().default(0.5),
    ceilingPerSecond: z.number().positive().default(1000),
    /**
     * Live requests go first; of the starts granted while history (backfill) requests wait, this fraction is
     * still owed to history, so live polls alone taking the whole budget never stop a backfill (0: strictly
     * live first). Only used when the live lanes want more than the rest of the budget.
     */
    backfillShare: z.number().min(0).max(1).default(0.25),
  })
  .strict()
  .prefault({});

export const apiSchema = z
  .object({
    baseUrl: z.url({
      protocol: /^https?$/,
      error: 'expected an absolute https:// URL, e.g. https://api.calls.example.com',
    }),
    /** Extra CA bundle (PEM) trusted in addition to the system's, e.g. the sandbox's certificate. */
    caFile: z.string().min(1).optional(),
    /** Plain HTTP is refused unless this is set: the spec says the API is HTTPS. For local tests only. */
    allowInsecureHttp: z.boolean().default(false),
    listPath: z.string().startsWith('/').default('/v4/calls'),
    /** `{uid}` is replaced by the URL-encoded call uid. */
    callPath: z.string().includes('{uid}').default('/v4/calls/{uid}'),
    /** Dotted path of the items array in a listing page body. */
    itemsField: z.string().min(1).default('data'),
    /** Dotted path of the next cursor; a top-level `nextCursor` is read when this path is absent. */
    nextCursorField: z.string().min(1).default('metadata.nextCursor'),
    /** Dotted path of the call object in a GET {callPath} body; when absent there, the body itself is the call. */
    callField: z.string().default('data'),
    tokenHeader: z.string().min(1).default('Authorization'),
    tokenPrefix: z.string().default('Bearer '),
    /** Page size sent as `limit`; the spec allows 0..100 (0 would never advance). */
    pageSize: z.number().int().min(1).max(100).default(100),
    requestsPerSecond: z.number().positive().default(20),
    maxConcurrency: z.number().int().min(1).max(256).default(8),
    requestTimeoutMs: durationMs(1).default(30_000),
    /** Complete each listed call from GET {callPath} (times, isPrivate, conversationUid). */
    enrich: z.boolean().default(true),
    enrichConcurrency: z.number().int().min(1).max(64).default(8),
    /**
     * A listing request that sent a cursor and got ANY 4xx but 401/403/429, whatever its body, restarts
     * from the watermark (the cursor is not usable; a restarted first page carries none, so a real bad
     * request still shows). These statuses name the expected answer (spec: not shown; the sandbox answers
     * 410 cursor_expired): the restart is then counted as `invalid_cursor` rather than `rejected_4xx`.
     */
    invalidCursorStatuses: z.array(z.number().int().min(400).max(499)).default([410]),
    /** ... likewise any 4xx whose error code (at errorCodeField) is one of these. */
    invalidCursorErrorCodes: z.array(z.string().min(1)).default(['invalid_cursor', 'cursor_expired']),
    /** Dotted paths of the error code and message in an error body (`{"error":{"code","message"}}`). */
    errorCodeField: z.string().min(1).default('error.code'),
    errorMessageField: z.string().min(1).default('error.message'),
    /** A response body larger than this is refused (memory stays bounded by pages in flight). */
    maxResponseBytes: z
      .number()
      .int()
      .min(1024)
      .default(16 * 1024 * 1024),
    retry: retrySchema,
    rateLimit: rateLimitSchema,
    /**
     * Page attempts after which a call whose GET {callPath} keeps failing transiently (5xx, timeouts) is
     * published unenriched and redacted (reason `unavailable`) instead of failing its page again: one
     * poison call never stalls its location.
     */
    poisonCallPageAttempts: z.number().int().min(1).max(1000).default(5),
  })
  .strict();

/**
 * `type` may be left out (docs/configuration.md: default `file`), so `store: { path: ... }` is a file store; the
 * discriminated union needs the tag, hence the preprocess.
 */
const tokenStoreSchema = z.preprocess(
  (value) =>
    value !== null && typeof value === 'object' && !Array.isArray(value) && !('type' in value)
      ? { type: 'file', ...value }
      : value,
  z.discriminatedUnion('type', [
    z
      .object({
        type: z.literal('file'),
        path: z.string().min(1).default('./.calls-connector/tokens.enc'),
      })
      .strict(),
    z
      .object({
        type: z.literal('kafka'),
        topic: z.string().min(1).default('calls-connector-tokens'),
      })
      .strict(),
  ]),
);

export const oauthSchema = z
  .object({
    /** Base of /oauth/authorize and /oauth/token; defaults to api.baseUrl (the OAuth paths carry no /v4). */
    baseUrl: z
      .url({
        protocol: /^https?$/,
        error: 'expected an absolute https:// URL, e.g. https://auth.calls.example.com',
      })
      .optional(),
    clientId: z.string().min(1),
    /** Use `${ENV}` interpolation or clientSecretFile; never put the secret itself in a committed file. */
    clientSecret: z.string().min(1).optional(),
    clientSecretFile: z.string().min(1).optional(),
    redirectUri: z.url({ protocol: /^https$/, error: 'redirectUri must be an https:// URL (spec 4.1)' }),
    scopes: z.array(z.string().regex(/^\S+$/)).min(1).default(['read_phones']),
    /** Name of the grant (the authorized user); sources refer to it. */
    grant: z.string().min(1).default('default'),
    /** Refresh this long before the 10 h expiry. */
    refreshBeforeExpiryMs: durationMs().default(10 * 60_000),
    /** Lifetime assumed for an access token when the token response has no `expires_in` (spec 8: 10 hours). */
    accessTokenLifetimeMs: durationMs(60_000).default(10 * 3600_000),
    /** How long the state of an authorization URL (`auth url`, `auth login`) can be redeemed. */
    stateTtlMs: durationMs(1_000).default(10 * 60_000),
    /**
     * After the token endpoint refuses a refresh token, wait this long for another instance's rotated token to
     * appear in the store before declaring the grant revoked (several instances sharing a Kafka store).
     */
    rotationGraceMs: durationMs().default(3_000),
    /**
     * Each instance refreshes up to this much earlier than refreshBeforeExpiryMs (a random share, chosen
     * at start), so instances sharing a grant do not refresh at the same moment.
     */
    refreshJitterMs: durationMs().default(5 * 60_000),
    store: tokenStoreSchema.default({ type: 'file', path: './.calls-connector/tokens.enc' }),
    /** Encryption key for the token store: 32 bytes, base64 or hex, from this env var ... */
    keyEnv: z.string().min(1).default('CALLS_CONNECTOR_TOKEN_KEY'),
    /** ... or from this file (never stored beside the token data). */
    keyFile: z.string().min(1).optional(),
  })
  .strict()
  .refine((o) => o.clientSecret !== undefined || o.clientSecretFile !== undefined, {
    message: 'set oauth.clientSecret (from ${ENV}) or oauth.clientSecretFile',
    path: ['clientSecret'],
  });

const uuid = z.string().regex(/^[0-9a-fA-F-]{36}$/, 'a location uid is a UUID');

const sourceSchema = z
  .object({
    /** The OAuth grant whose token reads these locations. */
    grant: z.string().min(1).default('default'),
    locations: z.array(uuid).min(1),
    /** First traversal's `since` for a location with no stored offset; absent = from the beginning. */
    startSince: z.iso
      .datetime({
        offset: true,
        error: 'expected an RFC 3339 date-time with a zone, e.g. 2024-05-01T00:00:00Z',
      })
      .optional(),
  })
  .strict();

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
    /** Distributed mode: the instances' consumer group session timeout (>= the broker's group.min.session.timeout.ms). */
    groupSessionTimeoutMs: durationMs(1000).default(10_000),
    groupHeartbeatIntervalMs: durationMs(100).default(3_000),
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
    // ---- issue 13: Connect/Debezium conventions ----
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
    // ---- issue 24: what a Connect/Confluent user expects ----
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

export const schemaRegistrySchema = z
  .object({
    url: z.url({
      protocol: /^https?$/,
      error: 'expected the http(s):// base of a Confluent-compatible API, e.g. http://registry:8081',
    }),
    username: z.string().optional(),
    password: z.string().optional(),
    /**
     * Extra CA bundle (PEM) trusted in addition to the system's for an https:// registry, e.g. a private
     * CA's (like api.caFile). Verification cannot be turned off. See docs/kafka-security.md.
     */
    caFile: z.string().min(1).optional(),
    /**
     * Compatibility level set on a subject the connector registers first. An existing subject must have
     * this level (the registry client checks it before registering a new schema version).
     */
    compatibility: z
      .enum([
        'BACKWARD',
        'BACKWARD_TRANSITIVE',
        'FORWARD',
        'FORWARD_TRANSITIVE',
        'FULL',
        'FULL_TRANSITIVE',
        'NONE',
      ])
      .default('BACKWARD'),
  })
  .strict()
  .refine((r) => (r.username === undefined) === (r.password === undefined), {
    message: 'set both schemaRegistry.username and schemaRegistry.password, or neither',
    path: ['username'],
  })
  .refine((r) => r.caFile === undefined || r.url.toLowerCase().startsWith('https:'), {
    message:
      'schemaRegistry.caFile applies to an https:// registry: use https:// in schemaRegistry.url, or drop caFile',
    path: ['caFile'],
  });

export const configSchema = z
  .object({
    connector: z
      .object({
        /** Names the transactional id, offset keys and client id: two instances with one name fence each other. */
        name: z.string().regex(/^[A-Za-z0-9._-]{1,100}$/, 'letters, digits, dot, dash and underscore only'),
        /**
         * single: one writing instance per name (a newer one fences the older, which stands by).
         * distributed: instances with one name share the locations through the consumer group
         * `<name>-instances` (one owner per offsets-topic partition).
         */
        mode: z.enum(['single', 'distributed']).default('single'),
      })
      .strict(),
    api: apiSchema,
    /** Absent: a static token from `auth.staticToken` (development, tests). */
    oauth: oauthSchema.optional(),
    auth: z
      .object({
        /** A fixed access token, for development against the sandbox; production uses `oauth`. */
        staticToken: z.string().min(1).optional(),
      })
      .strict()
      .prefault({}),
    sources: z.array(sourceSchema).min(1),
    kafka: kafkaSchema,
    schemaRegistry: schemaRegistrySchema,
    poll: z
      .object({
        /** Time between a location's polls, each at its own phase of the interval (sync/poll-phase.ts). */
        intervalMs: durationMs().default(60_000),
        /** Locations traversed at the same time. */
        maxLocationsInFlight: z.number().int().min(1).max(1024).default(4),
        /** Most uids kept for the inclusive `since` boundary; see docs/how-it-works.md "boundary cap". */
        boundaryCap: z.number().int().min(1).max(1_000_000).default(5_000),
        /** Bounded shutdown: abort what is open after this long. */
        shutdownTimeoutMs: durationMs().default(30_000),
        /**
         * Pages a location processes before yielding its slot to the next ready location (fairness: a long
         * backfill does not starve the others; a larger value keeps cursors fresher).
         */
        pagesPerTurn: z.number().int().min(1).max(10_000).default(20),
        /**
         * A location stopped by an error that can heal (403, cursor loop, revoked grant, ...; see
         * docs/sync.md) is tried again after initialDelayMs, growing by multiplier per consecutive stop up
         * to maxDelayMs, shortened at random by up to `jitter` of it.
         */
        stoppedRetry: z
          .object({
            initialDelayMs: durationMs(1_000).default(DEFAULT_STOPPED_RETRY.initialDelayMs),
            maxDelayMs: durationMs(1_000).default(DEFAULT_STOPPED_RETRY.maxDelayMs),
            multiplier: z.number().min(1).max(10).default(DEFAULT_STOPPED_RETRY.multiplier),
            jitter: z.number().min(0).max(1).default(DEFAULT_STOPPED_RETRY.jitter),
          })
          .strict()
          .refine((r) => r.maxDelayMs >= r.initialDelayMs, {
            message: 'maxDelayMs must be >= initialDelayMs',
            path: ['maxDelayMs'],
          })
          .prefault({}),
      })
      .strict()
      .prefault({}),
    /**
     * The present first (docs/sync.md "Lanes"): a location with no stored offset, or one behind the API's
     * newest change by more than splitBacklogMs, is split at T0 (the newest updatedAt less overlapMs) into a
     * live lane polled every interval from T0 and a history lane reading up to T0 with the budget the live
     * lanes leave.
     */
    lanes: z
      .object({
        /** false: never split (one lane per location, history before the present). */
        enabled: z.boolean().default(true),
        /** T0 = the API's newest updatedAt minus this, so changes written slightly out of order are not missed. */
        overlapMs: durationMs().default(60_000),
        /** A stored position older than the API's newest change by more than this is split; 0 = never. */
        splitBacklogMs: durationMs().default(3_600_000),
        /**
         * `limit` of history pages (at most api.pageSize): a split location's live poll waits for its history
         * page in flight, so short history pages keep it fresh (one more listing request per this many calls).
         */
        historyPageSize: z.number().int().min(1).max(100).default(20),
      })
      .strict()
      .prefault({}),
    privacy: z
      .object({
        /**
         * redact-unless-public: publish customerPhoneNumber only when GET /v4/calls/{uid} said isPrivate=false.
         * redact-always: never publish it.
         */
        customerPhoneNumber: z
          .enum(['redact-unless-public', 'redact-always'])
          .default('redact-unless-public'),
      })
      .strict()
      .prefault({}),
    metrics: z
      .object({
        enabled: z.boolean().default(true),
        /** Loopback by default: /metrics and /readyz are for the local scraper; containers set 0.0.0.0. */
        host: z.string().default('127.0.0.1'),
        port: z.number().int().min(0).max(65535).default(9464),
        /** Label per-location series with the location uid; turn off for thousands of locations. */
        perLocationLabels: z.boolean().default(true),
      })
      .strict()
      .prefault({}),
    /**
     * Explicit consent to settings that expose credentials or data in transit. Without it such settings are
     * refused at validation; with it they are accepted and warned about at every start (see insecureSettings).
     */
    security: z
      .object({
        /** Accept SASL without TLS (credentials in clear) and kafka.ssl.rejectUnauthorized: false. */
        allowInsecureKafka: z.boolean().default(false),
        /** Accept schemaRegistry.username/password over http:// (basic auth in clear). */
        allowInsecureRegistry: z.boolean().default(false),
      })
      .strict()
      .prefault({}),
    logging: z
      .object({
        level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace']).default('info'),
        /** auto: human-readable when stdout is a terminal, JSON otherwise. */
        format: z.enum(['auto', 'json', 'pretty']).default('auto'),
      })
      .strict()
      .prefault({}),
  })
  .strict()
  .refine((c) => c.oauth !== undefined || c.auth.staticToken !== undefined, {
    message: 'configure `oauth` (production) or `auth.staticToken` (development)',
    path: ['oauth'],
  })
  .superRefine((c, ctx) => {
    for (const insecure of insecureSettings(c)) {
      if (c.security[insecure.consent]) continue;
      ctx.addIssue({
        code: 'custom',
        path: insecure.path,
        message: `${insecure.problem}; fix it, or set security.${insecure.consent}: true to accept the risk`,
      });
    }
  })
  .superRefine((c, ctx) => {
    // One offset key per location: a location in two sources would be synced twice under two grants.
    const seen = new Set<string>();
    c.sources.forEach((source, i) =>
      source.locations.forEach((uid, j) => {
        const key = uid.toLowerCase();
        if (seen.has(key))
          ctx.addIssue({
            code: 'custom',
            path: ['sources', i, 'locations', j],
            message: `location ${uid} is listed twice in sources; list each location once`,
          });
        seen.add(key);
      }),
    );
  });

export type ConnectorConfig = z.infer<typeof configSchema>;

/** A setting that sends credentials or data unprotected, and the security.* key that accepts it. */
export interface InsecureSetting {
  path: string[];
  problem: string;
  consent: 'allowInsecureKafka' | 'allowInsecureRegistry';
}

/**
 * The insecure settings of a configuration: refused by the schema unless their consent key is set, and
 * then logged as warnings at start (`run`). Pure.
 */
export function insecureSettings(c: Pick<ConnectorConfig, 'kafka' | 'schemaRegistry'>): InsecureSetting[] {
  const found: InsecureSetting[] = [];
  const ssl = c.kafka.ssl;
  if (c.kafka.sasl !== undefined && (ssl === undefined || ssl === false)) {
    found.push({
      path: ['kafka', 'sasl'],
      problem: 'kafka.sasl without kafka.ssl sends the SASL credentials and every record unencrypted',
      consent: 'allowInsecureKafka',
    });
  }
  if (typeof ssl === 'object' && !ssl.rejectUnauthorized) {
    found.push({
      path: ['kafka', 'ssl', 'rejectUnauthorized'],
      problem:
        'kafka.ssl.rejectUnauthorized: false accepts any broker certificate (anyone in the path can impersonate the brokers)',
      consent: 'allowInsecureKafka',
    });
  }
  const sasl = c.kafka.sasl;
  const tokenUrl = sasl?.mechanism === 'oauthbearer' ? URL.parse(sasl.tokenEndpointUrl) : null;
  if (tokenUrl?.protocol === 'http:' && !isLoopback(tokenUrl.hostname)) {
    found.push({
      path: ['kafka', 'sasl', 'tokenEndpointUrl'],
      problem: 'kafka.sasl.tokenEndpointUrl over http:// sends the client secret and the tokens unencrypted',
      consent: 'allowInsecureKafka',
    });
  }
  const registryUrl = URL.parse(c.schemaRegistry.url);
  const basicAuth = c.schemaRegistry.username !== undefined || (registryUrl?.username ?? '') !== '';
  // Over loopback the credentials never leave the host (the demo, a local registry): not refused.
  const loopback = isLoopback(registryUrl?.hostname ?? '');
  if (basicAuth && registryUrl?.protocol === 'http:' && !loopback) {
    found.push({
      path: ['schemaRegistry', 'url'],
      problem:
        'schemaRegistry basic auth (username/password or URL userinfo) over http:// sends the credentials unencrypted',
      consent: 'allowInsecureRegistry',
    });
  }
  return found;
}

/** Whether a URL's hostname is this machine: credentials sent there never leave the host. */
function isLoopback(hostname: string): boolean {
  return /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/i.test(hostname);
}
export type ApiConfig = z.infer<typeof apiSchema>;
export type RetryConfig = ApiConfig['retry'];
export type OAuthConfig = z.infer<typeof oauthSchema>;
export type KafkaConfig = z.infer<typeof kafkaSchema>;
export type SchemaRegistryConfig = z.infer<typeof schemaRegistrySchema>;
export type PrivacyPolicy = ConnectorConfig['privacy']['customerPhoneNumber'];
