/**
 * The words of the configuration reference (docs/configuration.md), keyed by dotted key: what each key means
 * and, where the schema cannot say it, how its default reads (another key's value, `off`). Keys, order,
 * required-ness and literal defaults come from the schema itself (`npm run docs:config` writes the file).
 * A key added to a section of the schema (src/config/sections/) needs a line here: the reference says so until
 * it has one, and a unit test (test/unit/docs/configuration.test.ts) fails.
 */

/** A key's meaning, or its meaning with the text of its default column. */
export type KeyDescription = string | { default: string; meaning: string };

/** The reference's sections, in order: a title, the top-level sections they hold, and an optional introduction. */
export const REFERENCE_SECTIONS: ReadonlyArray<{ title: string; sections: string[]; intro?: string }> = [
  { title: '`connector`', sections: ['connector'] },
  { title: '`api`', sections: ['api'] },
  {
    title: '`oauth` (production) or `auth.staticToken` (development)',
    sections: ['oauth', 'auth'],
    intro:
      'One of the two is required. See [oauth.md](oauth.md) for the setup, the token store and key management, ' +
      'rotation, and what to do on `AUTH_GRANT_REVOKED`.',
  },
  { title: '`sources`', sections: ['sources'] },
  { title: '`kafka`', sections: ['kafka'] },
  { title: '`schemaRegistry`', sections: ['schemaRegistry'] },
  {
    title: '`poll`, `lanes`, `privacy`, `metrics`, `logging`, `security`',
    sections: ['poll', 'lanes', 'privacy', 'metrics', 'logging', 'security'],
  },
  {
    title: '`webhooks`',
    sections: ['webhooks'],
    intro:
      'The receiver of the `call.*` webhooks (off by default): a delivery makes its location poll now, and the ' +
      'polls reconcile at `reconcileIntervalMs`. Registering the endpoint, TLS and ingress, secrets and their rotation, mapping a real payload: ' +
      '[webhooks.md](webhooks.md).',
  },
];

export const KEY_DESCRIPTIONS: Readonly<Record<string, KeyDescription>> = {
  'connector.name':
    'Letters, digits, `.`, `-`, `_`. Names the Kafka transactional id, the offset keys and the client id. Two instances with one name fence each other: only the newest writes.',
  'connector.mode':
    '`single`: one writer per name (the newest fences the older). `distributed`: instances with one name share the locations (see `kafka.offsetsTopicPartitions`).',
  'api.baseUrl': '`https://…` base of the calls API (and of `/oauth/*` unless `oauth.baseUrl`).',
  'api.caFile':
    "Extra CA bundle (PEM) trusted besides the system's, e.g. the sandbox's generated certificate. TLS verification is always on.",
  'api.allowInsecureHttp': 'Allow an `http://` base URL (local experiments only).',
  'api.listPath': 'Listing path ("not shown" in the spec).',
  'api.callPath': 'Single-call path, from the leading `/`; `{uid}` is replaced.',
  'api.itemsField': 'Dotted path of the items array in a listing body.',
  'api.nextCursorField': 'Dotted path of the next cursor; a top-level `nextCursor` is read when absent.',
  'api.callField': 'Dotted path of the call in a single-call body; the body itself when absent.',
  'api.tokenHeader': 'Header carrying the access token.',
  'api.tokenPrefix': 'Prefix before the token in that header.',
  'api.pageSize': '`limit` per page, 1–100 (spec: 0–100; 0 never advances).',
  'api.requestsPerSecond':
    'Starting rate of each rate-limit scope (listing and single-call requests); the rate then adapts to the API ([rate-limits.md](rate-limits.md)). Fractions allowed.',
  'api.rateLimit.scope':
    '`grant`: one learned limit per OAuth grant (limits are usually per access token), or `global`.',
  'api.rateLimit.floorPerSecond': 'Lowest rate a scope learns down to.',
  'api.rateLimit.ceilingPerSecond': 'Highest rate a scope learns up to.',
  'api.rateLimit.backfillShare':
    "History's guaranteed share while live work wants more: of the worker turns, and of the rate limiter's starts while history requests wait; polls are stretched evenly rather than take it (0: strict, history gets only what live leaves).",
  'api.rateLimit.nudgeShare':
    'With webhooks on, the guaranteed share of the worker turns of the polls deliveries nudged, beside backfillShare (the two sum to at most 1; scheduled polls have the rest); an unused share is borrowed.',
  'api.poisonCallPageAttempts':
    'Page attempts after which a call whose single-call GET keeps failing (while the API answers others) is published unenriched and redacted.',
  'api.maxConcurrency': 'Requests in flight at most.',
  'api.requestTimeoutMs': 'Timeout of one request (headers and body).',
  'api.enrich':
    'Complete listed calls from `GET callPath`. Off: `isPrivate` is unknown, so the customer number is always redacted.',
  'api.enrichConcurrency': 'Single-call requests in flight per page.',
  'api.invalidCursorStatuses':
    'Statuses named "cursor no longer valid"; any 4xx but 401/403/429 after a cursor restarts from the watermark anyway.',
  'api.invalidCursorErrorCodes': 'Error codes (at `api.errorCodeField`) with the same meaning, on any 4xx.',
  'api.errorCodeField': 'Dotted path of the error code in an error body.',
  'api.errorMessageField': 'Dotted path of the error message.',
  'api.maxResponseBytes': 'A larger response body is refused (memory stays bounded).',
  'api.retry.maxAttempts': 'Attempts per request, the first included.',
  'api.retry.initialDelayMs':
    'Backoff base: retry n waits a uniform random time in [0, min(maxDelayMs, initialDelayMs × multiplier^(n−1))].',
  'api.retry.maxDelayMs': 'Backoff cap.',
  'api.retry.multiplier': 'Backoff growth.',
  'api.retry.statuses':
    'Statuses retried (network errors and timeouts are retried too). 401 refreshes the token once; 403 is never retried.',
  'api.retry.maxRetryAfterMs':
    "The longest hold of a limiter scope: a longer wait (429 or 503 `Retry-After`, a spent quota's reset) parks the scope this long at a time, then one request tries again; on other statuses a longer `Retry-After` is a failure.",
  'oauth.baseUrl': {
    default: '`api.baseUrl`',
    meaning: 'Base of `/oauth/authorize` and `/oauth/token` (https only).',
  },
  'oauth.clientId': 'From the developer portal.',
  'oauth.clientSecret': 'Write `${ENV_VAR}`; never the secret itself. Or:',
  'oauth.clientSecretFile': 'A file holding the secret (first line).',
  'oauth.redirectUri': 'The registered redirect URI; must be `https://`.',
  'oauth.scopes': 'Requested scopes (joined with `%20`).',
  'oauth.grant': 'Name of the authorized account; `sources[].grant` refers to it.',
  'oauth.refreshBeforeExpiryMs':
    'Refresh this long before the access token expires (it is also refreshed on a 401).',
  'oauth.accessTokenLifetimeMs': 'Lifetime assumed when the token response has no `expires_in` (spec: 10 h).',
  'oauth.stateTtlMs': 'How long an authorization `state` can be redeemed.',
  'oauth.rotationGraceMs':
    "With several instances on a Kafka store: wait this long for another instance's rotated token before declaring the grant revoked.",
  'oauth.refreshJitterMs':
    'Each instance refreshes up to this much earlier still (a random share chosen at start), so instances sharing a grant do not refresh together.',
  'oauth.store.type': '`file` (one instance) or `kafka` (several instances).',
  'oauth.store.path': 'File store: mode 0600, atomic replace.',
  'oauth.store.topic': 'Kafka store: a compacted topic.',
  'oauth.keyEnv': 'Environment variable holding the 32-byte store key (base64 or hex). Or:',
  'oauth.keyFile': 'A file holding the key; refused when it sits beside the token store.',
  'auth.staticToken': 'A fixed access token (development against the sandbox); a 401 is then fatal.',
  'sources[].locations': 'Location uids (UUIDs) to sync. Each location once across all sources.',
  'sources[].grant': 'The OAuth grant whose token reads these locations.',
  'sources[].startSince':
    '`since` of the first traversal of a location with no stored offset; absent = from the beginning.',
  'kafka.brokers': '`host:port` list.',
  'kafka.clientId': {
    default: '`connector.name`',
    meaning: 'Kafka client id (also the prefix of throw-away reader groups).',
  },
  'kafka.ssl': { default: 'off', meaning: '`true` for TLS with the system CAs, or the object below.' },
  'kafka.ssl.caFile': "CA bundle (PEM) for the brokers' certificates.",
  'kafka.ssl.certFile': 'Client certificate (PEM) for mutual TLS.',
  'kafka.ssl.keyFile': 'Client key (PEM) for mutual TLS.',
  'kafka.ssl.rejectUnauthorized': "Verify the brokers' certificates.",
  'kafka.sasl.mechanism':
    '`plain`, `scram-sha-256` or `scram-sha-512` (any case: `SCRAM-SHA-512` too), with `kafka.sasl.username` and `kafka.sasl.password` (`${ENV}`).',
  'kafka.sasl.username': '',
  'kafka.sasl.password': '',
  'kafka.sasl.tokenEndpointUrl':
    '`oauthbearer` only (the OIDC login of KIP-768): the token endpoint the client-credentials grant is sent to ([kafka-security.md](kafka-security.md)).',
  'kafka.sasl.clientId': "`oauthbearer`: the client id, sent in HTTP Basic as Kafka's Java client does.",
  'kafka.sasl.clientSecret': '`oauthbearer`: the client secret (`${ENV}`), or `kafka.sasl.clientSecretFile`.',
  'kafka.sasl.clientSecretFile':
    '`oauthbearer`: a file holding the client secret (trailing newline trimmed).',
  'kafka.sasl.scope': '`oauthbearer`: the `scope` sent to the token endpoint (space-separated), when set.',
  'kafka.sasl.extensions':
    '`oauthbearer`: SASL extensions sent with the token (e.g. `logicalCluster`, `identityPoolId`); `auth` is reserved.',
  'kafka.sasl.caFile': "`oauthbearer`: extra CA (PEM) for the token endpoint's certificate.",
  'kafka.sasl.requestTimeoutMs': '`oauthbearer`: deadline of one token request.',
  'kafka.topic': 'The calls topic.',
  'kafka.offsetsTopic':
    'Compacted topic of per-location offsets (one per connector recommended). Must be compacted: checked at start.',
  'kafka.dlqTopic': 'Dead-letter topic.',
  'kafka.exactlyOnce':
    '`true`: each page and its offset in one transaction. `false`: idempotent producer, at least once (see [operations.md](operations.md#exactly-once-and-the-trade-off-of-exactlyonce-false)).',
  'kafka.createTopics': 'Create missing topics at start (needs the CreateTopics ACL).',
  'kafka.topicPartitions': 'Partitions of a created calls topic (offsets, DLQ: 1).',
  'kafka.replicationFactor': 'Replication of created topics; use 3 in production.',
  'kafka.keyFormat': 'Record key: the uid as UTF-8, or `avro` (record `CallKey{uid}` under `<topic>-key`).',
  'kafka.transactionTimeoutMs':
    'The broker aborts a transaction not committed in time (≤ broker `transaction.max.timeout.ms`).',
  'kafka.compression':
    'Codec of the record batches the connector writes: `none`, `gzip`, `snappy`, `lz4` or `zstd` ([kafka-security.md](kafka-security.md)).',
  'kafka.maxPagesPerTransaction':
    'Group commit: pages queued while a transaction is in flight share the next one, at most this many.',
  'kafka.maxBytesPerTransaction':
    '... and about this many bytes (keys+values); keep under the broker message.max.bytes (1 MiB).',
  'kafka.fencedRebuildLimit':
    'Rebuilds of a producer fenced because its transaction outlived `kafka.transactionTimeoutMs`, within `kafka.fencedWindowMs`; once more: stand by. A newer instance is never fenced back.',
  'kafka.fencedWindowMs': 'Window of that count.',
  'kafka.offsetsLoadTimeoutMs': 'Reading the offsets topic to its end at start must finish within this time.',
  'kafka.offsetsTopicPartitions':
    'Partitions of a created offsets topic: the most instances sharing the work in distributed mode. Never change it later (locations would move).',
  'kafka.groupSessionTimeoutMs':
    'Distributed mode: an instance silent this long leaves the group; its partitions move (≥ broker `group.min.session.timeout.ms`, 6 s on a stock broker: see [scaling.md](scaling.md#the-session-timeout-trade-off)).',
  'kafka.groupHeartbeatIntervalMs':
    'Distributed mode: group heartbeat interval (about a third of the session timeout).',
  'kafka.groupRebalanceTimeoutMs':
    'Distributed mode: how long a rebalance waits for every instance to rejoin.',
  'kafka.topicCleanupPolicy':
    '`cleanup.policy` of the calls topic when the connector creates it: `compact` (latest version of every call), `delete` or `compact,delete`.',
  'kafka.tombstoneGoneCalls':
    'A listed call whose `GET /v4/calls/{uid}` answers not found: `false` publishes it unenriched (number redacted); `true` publishes a tombstone instead. See [operations.md](operations.md#calls-the-api-reports-gone).',
  'kafka.heartbeatIntervalMs':
    'Heartbeat records per location this often (`0`: off). See [operations.md](operations.md#heartbeats).',
  'kafka.heartbeatTopic': 'Where heartbeats go (compacted, created like the other topics).',
  'schemaRegistry.url':
    "Confluent-compatible API base, e.g. `http://registry:8081` or Apicurio's `…/apis/ccompat/v7`.",
  'schemaRegistry.caFile':
    "Extra CA (PEM) trusted for an `https://` registry's certificate, beside the system's ([kafka-security.md](kafka-security.md)).",
  'schemaRegistry.username': 'Basic auth, with `schemaRegistry.password` (`${ENV}`).',
  'schemaRegistry.password': '',
  'schemaRegistry.compatibility':
    'Compatibility set on a subject the connector registers first; an existing subject must match.',
  'poll.intervalMs':
    "Time between a location's polls: each location polls at its own phase of the interval, so polls spread evenly over it. With `webhooks.enabled`, `webhooks.reconcileIntervalMs` instead.",
  'poll.maxLocationsInFlight':
    'Locations worked on at the same time (each holds at most two pages: one committing, one read ahead); also the most history pages read in the background at a time, waiting for their turn.',
  'lanes.enabled':
    'Split a location far behind into a live lane (polled every interval from T0) and a history lane behind it ([sync.md](sync.md#lanes-the-present-first)).',
  'lanes.overlapMs':
    'T0 is the first `updatedAt` the API lists at or before its newest less this, exactly as the API wrote it, so changes the API writes slightly out of order are not missed.',
  'lanes.groupPieceSize':
    "Calls of a same-instant group (a bulk import at one instant) one history page publishes, and a live lane lists ahead of its pages, while the lane's boundary (`poll.boundaryCap` and the offsets topic's byte budget) can hold the whole group, so a restart from that instant resumes exactly; past that, the rest of the group is read as one page. Bounds a large group's memory and the requests a failed page repeats, and lets a lane whose cursor expired move on by a piece per restart.",
  'lanes.historyPageSize':
    "`limit` of the history lane's pages (at most `api.pageSize`). History pages are read in the background and committed in short turns; shorter pages bound what waits in memory, for one more listing request per this many calls.",
  'lanes.splitBacklogMs':
    'A location with no stored offset, or whose stored position is older than the newest change by more than this, is split; `0`: never.',
  'poll.pagesPerTurn':
    'Pages a location processes before yielding to the next ready location (fairness during backfills).',
  'poll.boundaryCap':
    'Most uids kept in `boundary` (see [how-it-works.md](how-it-works.md#how-a-location-is-synced), boundary cap).',
  'poll.shutdownTimeoutMs':
    'On SIGTERM, pages in flight may finish for this long, then are abandoned uncommitted.',
  'poll.stoppedRetry.initialDelayMs':
    'A location stopped by an error that can heal is retried after this long (see [sync.md](sync.md#stopped-locations-heal)).',
  'poll.stoppedRetry.maxDelayMs': '... growing per consecutive stop up to this.',
  'poll.stoppedRetry.multiplier': 'Growth factor of that backoff.',
  'poll.stoppedRetry.jitter': 'Each wait is shortened at random by up to this fraction of it.',
  'privacy.customerPhoneNumber':
    '`redact-unless-public`: publish it only when `GET /v4/calls/{uid}` said `isPrivate: false`. `redact-always`: never.',
  'privacy.maxEnrichmentAgeMs':
    'A page whose `GET /v4/calls/{uid}` answers are older than this when it commits (a history page read ahead waits for its turn) asks them again first, so `isPrivate` is never taken from an older answer. At least 1000.',
  'metrics.enabled': 'Serve `/metrics`, `/healthz`, `/readyz`.',
  'metrics.host':
    "Bind address: loopback outside containers; the image's and compose's config set `0.0.0.0` explicitly.",
  'metrics.port': 'Port.',
  'metrics.perLocationLabels':
    'Label per-location series with the location uid; turn off with thousands of locations.',
  'metrics.freshnessObjectiveMs':
    "The freshness objective: the 99th percentile of the delay from a change's `updatedAt` to its commit (live lane) that `CallsConnectorFreshnessObjectiveMissed` holds the connector to ([metrics.md](metrics.md#freshness)). Unset: twice the live poll interval (`poll.intervalMs`, or `webhooks.reconcileIntervalMs` with webhooks on: set it lower there, where nudged changes are published in seconds). At least 1000.",
  'logging.level':
    '`fatal` … `trace`. The `auth` commands ignore it: they log JSON to stderr at `warn`, or at `LOG_LEVEL` when set.',
  'logging.format': '`auto` (human-readable on a terminal, JSON otherwise), `json`, `pretty`.',
  'security.allowInsecureKafka':
    'Accept `kafka.sasl` without `kafka.ssl` and `kafka.ssl.rejectUnauthorized: false` (refused otherwise); warned at start.',
  'security.allowInsecureRegistry':
    'Accept schema-registry basic auth over `http://` to a non-loopback host (refused otherwise); warned at start. See [security.md](security.md).',
  'webhooks.enabled': 'Start the webhook receiver (its own listener, apart from `metrics`).',
  'webhooks.host': 'Bind address: loopback behind a local ingress; `0.0.0.0` to be reached from elsewhere.',
  'webhooks.port': 'Port of the receiver (never the metrics port: this one faces the internet).',
  'webhooks.path':
    'Route of the deliveries; `{path}/{grant}` names the grant whose locations a delivery without a location nudges.',
  'webhooks.tls.certFile':
    'PEM certificate chain: HTTPS. Absent (no `tls`): plain HTTP behind an ingress that terminates TLS.',
  'webhooks.tls.keyFile': 'PEM private key of that certificate (mode 600).',
  'webhooks.bodyLimitBytes': 'Larger deliveries are refused with 413 (`too_large`) before they are read.',
  'webhooks.limits.maxConnections':
    'Open connections to the receiver in all; more are closed as they open, before anything is read.',
  'webhooks.limits.maxConnectionsPerAddress':
    'Open connections from one source address. Behind an ingress all come from its addresses: cover the connections it keeps open.',
  'webhooks.limits.headersTimeoutMs':
    'A connection whose request headers are not in within this is cut (408); checked every second.',
  'webhooks.limits.requestTimeoutMs':
    'A connection whose whole request is not in within this is cut (408); at least `headersTimeoutMs`.',
  'webhooks.limits.nudgeTimeoutMs':
    'A delivery whose nudge is not taken within this (distributed mode: written to the nudge topic) is answered 503, so the sender retries.',
  'webhooks.signature.scheme':
    '`standard-webhooks` (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,…` or `v1a,…`), `hmac` or `ed25519` over a template, `jwt` (HS256, body or header), or `token` (a shared token, signing nothing). Ready configurations per sender: [webhooks.md](webhooks.md#ready-configurations-per-sender).',
  'webhooks.signature.secretEnv':
    'Environment variables holding the active secrets (unset ones are skipped; several while rotating). `whsec_<base64>` (or a `whpk_` public key) for `standard-webhooks`.',
  'webhooks.signature.secretFiles': {
    default: 'none',
    meaning: 'Files of active secrets, one per non-empty line (mode 600).',
  },
  'webhooks.signature.keyEncoding': {
    default: 'by scheme',
    meaning:
      'How a secret becomes the key: `utf8` (`hmac`, `jwt`, `token`), `hex`, `base64` (`ed25519` public keys; PEM also read), `standard-webhooks` (`whsec_`/`whpk_`, that scheme).',
  },
  'webhooks.signature.toleranceMs':
    'How far a signed timestamp may be from now, either way; older deliveries are refused (`stale_timestamp`).',
  'webhooks.signature.publicUrl': {
    default: 'none',
    meaning:
      'The origin the sender posts to (e.g. `https://hooks.example.com`): `{url}` in a signed content is this followed by the request path and query.',
  },
  'webhooks.signature.standardWebhooks.headerPrefix':
    '`webhook` (`webhook-id`…) or `svix` (`svix-id`…, Svix-branded senders such as Clerk).',
  'webhooks.signature.challenge':
    'Registration handshake answered: `slack` (url_verification), `zoom` (endpoint.url_validation), `ringcentral` (Validation-Token echo), or `none`.',
  'webhooks.signature.hmac.header': 'Header of the signature(s) (several separated by commas or spaces).',
  'webhooks.signature.hmac.encoding': '`hex` or `base64` of the signature.',
  'webhooks.signature.hmac.prefix': {
    default: 'empty',
    meaning: 'Text before each signature, e.g. `sha256=`, `v1=`; entries without it are skipped.',
  },
  'webhooks.signature.hmac.signedContent':
    'What is signed: a template over `{body}`, `{timestamp}`, `{id}`, `{url}`, `{header.NAME}`, `{field.NAME}`, e.g. `v0:{timestamp}:{body}`; the words `body` and `timestamp.body` also work.',
  'webhooks.signature.hmac.timestampHeader': {
    default: 'none',
    meaning:
      'Header of the timestamp, checked against `toleranceMs`; signed only if the template includes it.',
  },
  'webhooks.signature.hmac.timestampField': {
    default: 'none',
    meaning: 'A `NAME=value` field of the signature header holding the timestamp (Stripe: `t`).',
  },
  'webhooks.signature.hmac.timestampUnit': '`seconds` or `milliseconds`.',
  'webhooks.signature.hmac.separator': 'Between the timestamp and the body with the word `timestamp.body`.',
  'webhooks.signature.hmac.idHeader': {
    default: 'none',
    meaning:
      'Header of the delivery id: keys the replay window only when the signed content includes it (else a digest of the signed content does).',
  },
  'webhooks.signature.hmac.bodyHashParam': {
    default: 'none',
    meaning:
      'A query parameter of the signed URL that must hold the hex SHA-256 of the body (Twilio: `bodySHA256`).',
  },
  'webhooks.signature.ed25519.header': 'Header of the signature(s) (several separated by commas or spaces).',
  'webhooks.signature.ed25519.encoding': '`hex` or `base64` of the signature.',
  'webhooks.signature.ed25519.prefix': {
    default: 'empty',
    meaning: 'Text before each signature, e.g. `sha256=`, `v1=`; entries without it are skipped.',
  },
  'webhooks.signature.ed25519.signedContent':
    'What is signed: a template over `{body}`, `{timestamp}`, `{id}`, `{url}`, `{header.NAME}`, `{field.NAME}`, e.g. `v0:{timestamp}:{body}`; the words `body` and `timestamp.body` also work.',
  'webhooks.signature.ed25519.timestampHeader': {
    default: 'none',
    meaning:
      'Header of the timestamp, checked against `toleranceMs`; signed only if the template includes it.',
  },
  'webhooks.signature.ed25519.timestampField': {
    default: 'none',
    meaning: 'A `NAME=value` field of the signature header holding the timestamp (Stripe: `t`).',
  },
  'webhooks.signature.ed25519.timestampUnit': '`seconds` or `milliseconds`.',
  'webhooks.signature.ed25519.separator':
    'Between the timestamp and the body with the word `timestamp.body`.',
  'webhooks.signature.ed25519.idHeader': {
    default: 'none',
    meaning:
      'Header of the delivery id: keys the replay window only when the signed content includes it (else a digest of the signed content does).',
  },
  'webhooks.signature.ed25519.bodyHashParam': {
    default: 'none',
    meaning:
      'A query parameter of the signed URL that must hold the hex SHA-256 of the body (Twilio: `bodySHA256`).',
  },
  'webhooks.signature.hmac.algorithm': '`sha256`, `sha512` or `sha1`.',
  'webhooks.signature.jwt.location':
    '`body` (the body is the JWT; its claims are the event) or `header` (a header carries it; the body stays JSON).',
  'webhooks.signature.jwt.header': 'With `location: header`: the header carrying the JWT.',
  'webhooks.signature.jwt.prefix': 'Before the JWT in the header (any case).',
  'webhooks.signature.jwt.payloadHashClaim': {
    default: 'none',
    meaning:
      'Claim holding the hex SHA-256 of the body (Vonage: `payload_hash`); required with `location: header`.',
  },
  'webhooks.signature.jwt.idClaim': 'Claim naming the delivery (keys the replay window when present).',
  'webhooks.signature.token.location': '`header` or `body` (a field of the JSON body).',
  'webhooks.signature.token.header': 'With `location: header`: the header carrying the token.',
  'webhooks.signature.token.field': 'With `location: body`: dotted path of the token field.',
  'webhooks.replay.maxEntries':
    'Deliveries remembered (a signed id, or a digest of the signed content), so a replay nudges nothing; the oldest go first over this. In distributed mode each instance also remembers those the others took: size it for the whole deployment.',
  'webhooks.replay.waiveProtection':
    'Accept a scheme that signs no timestamp (refused otherwise): keys are then kept until `maxEntries` evicts them, after which a captured delivery is accepted again. See [webhooks.md](webhooks.md#replays).',
  'webhooks.payload.eventPath': 'Dotted path of the event name in a delivery.',
  'webhooks.payload.eventPrefix':
    'Events starting with this act; others are answered 200 and counted `ignored`.',
  'webhooks.payload.uidPath': 'Dotted path of the call uid.',
  'webhooks.payload.locationPath':
    'Dotted path of the location uid; when a payload has none, the uid index, else every location of the grant.',
  'webhooks.uidIndexSize':
    'Call uids whose location is remembered (least recently used go first), for deliveries without a location.',
  'webhooks.reconcileIntervalMs':
    'The live poll interval while the receiver is enabled, in place of `poll.intervalMs`: nudges poll changes as they come, these polls reconcile what deliveries missed.',
  'webhooks.missedGraceMs':
    'How late a delivery may come after a poll published its change before the change counts as a missed delivery (`calls_connector_webhook_missed_deliveries_total`).',
  'webhooks.allowUnsigned':
    'Development only: signatures are not checked at all; warned about loudly at every start.',
};
