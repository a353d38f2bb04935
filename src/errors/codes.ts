/**
 * Every error code the connector throws, in one table: its class (what happens next, see
 * connector-error.ts; a few codes are retriable from one place and fatal from another), the exit code
 * a command ending with it returns (README "Exit codes"), how a location it stopped heals when that is
 * not the default (sync/scheduler/health-rule.ts), and the operator hint the CLI prints when the message says what
 * failed but not what to change.
 *
 * ConnectorError's `code` is typed by this table, so a new code is added here first; a test checks that
 * every code here is still thrown somewhere.
 */
import { ExitCode } from './exit-codes.js';

export type ErrorClass = 'retriable' | 'fatal' | 'skippable';

export interface ErrorCodeEntry {
  /** What happens next; a list when the code is thrown with different classes from different places. */
  class: ErrorClass | readonly ErrorClass[];
  /** The exit code of a command that ends with this error. */
  exit: ExitCode;
  /**
   * How a location stopped by this (fatal) error heals, when not by the growing backoff (`heals`):
   * `paused` waits for a new grant, `never` needs a restart with changed settings.
   */
  healing?: 'paused' | 'never';
  /** What to do next, printed by the CLI under the error (never secret). */
  hint?: string;
}

export const ERROR_CODES = {
  ALL_LOCATIONS_STOPPED: { class: 'fatal', exit: ExitCode.FAILURE },
  API_BAD_REQUEST: { class: 'fatal', exit: ExitCode.FAILURE },
  API_BAD_URL: { class: 'fatal', exit: ExitCode.USAGE },
  API_CALL_REFUSED: { class: 'skippable', exit: ExitCode.FAILURE },
  API_CALL_TOO_LARGE: { class: 'skippable', exit: ExitCode.FAILURE },
  API_CA_FILE: { class: 'fatal', exit: ExitCode.USAGE },
  API_FORBIDDEN: { class: 'fatal', exit: ExitCode.FAILURE },
  API_INSECURE_URL: { class: 'fatal', exit: ExitCode.USAGE },
  API_INVALID_CURSOR: { class: 'retriable', exit: ExitCode.FAILURE },
  API_INVALID_REQUEST: { class: 'fatal', exit: ExitCode.FAILURE },
  API_MALFORMED_BODY: { class: ['fatal', 'retriable'], exit: ExitCode.FAILURE },
  API_NETWORK: { class: 'retriable', exit: ExitCode.FAILURE },
  API_NOT_FOUND: { class: 'fatal', exit: ExitCode.FAILURE },
  API_RESPONSE_TOO_LARGE: { class: 'retriable', exit: ExitCode.FAILURE },
  API_RETRY_AFTER_TOO_LONG: { class: 'retriable', exit: ExitCode.FAILURE },
  API_SERVER_ERROR: { class: 'retriable', exit: ExitCode.FAILURE },
  API_TIMEOUT: { class: 'retriable', exit: ExitCode.FAILURE },
  API_TLS: { class: 'fatal', exit: ExitCode.FAILURE },
  API_UNAUTHORIZED: { class: 'retriable', exit: ExitCode.FAILURE },
  API_UNAVAILABLE: { class: 'retriable', exit: ExitCode.FAILURE },
  /** A request of a parked (throttled) rate-limit scope: its location waits for the hold's end without a worker. */
  API_SCOPE_THROTTLED: { class: 'retriable', exit: ExitCode.FAILURE },
  AUTH_CALLBACK_LISTEN_FAILED: {
    class: 'fatal',
    exit: ExitCode.FAILURE,
    hint:
      "free the redirect_uri's port (another `auth login`?), or pass --listen HOST:PORT when the redirect " +
      'reaches this machine through a proxy',
  },
  AUTH_CALLBACK_NOT_LOCAL: { class: 'fatal', exit: ExitCode.USAGE },
  AUTH_CALLBACK_TLS_INCOMPLETE: { class: 'fatal', exit: ExitCode.USAGE },
  AUTH_CALLBACK_TLS_UNREADABLE: { class: 'fatal', exit: ExitCode.USAGE },
  AUTH_CLIENT_REJECTED: { class: 'fatal', exit: ExitCode.FAILURE, healing: 'never' },
  AUTH_CLIENT_SECRET_MISSING: { class: 'fatal', exit: ExitCode.USAGE },
  AUTH_CODE_MISSING: { class: 'fatal', exit: ExitCode.FAILURE },
  AUTH_DECLINED: { class: 'fatal', exit: ExitCode.FAILURE },
  AUTH_ENDPOINT_NOT_HTTPS: { class: 'fatal', exit: ExitCode.USAGE },
  AUTH_ENDPOINT_TLS_UNTRUSTED: { class: 'fatal', exit: ExitCode.FAILURE },
  AUTH_GRANT_REVOKED: { class: 'fatal', exit: ExitCode.FAILURE, healing: 'paused' },
  AUTH_INVALID_GRANT: { class: 'fatal', exit: ExitCode.FAILURE },
  AUTH_LOGIN_ABORTED: { class: 'fatal', exit: ExitCode.INTERRUPTED },
  AUTH_LOGIN_TIMEOUT: { class: 'fatal', exit: ExitCode.FAILURE },
  AUTH_NOT_CONFIGURED: { class: 'fatal', exit: ExitCode.USAGE },
  AUTH_NO_GRANT: { class: 'fatal', exit: ExitCode.FAILURE, healing: 'paused' },
  AUTH_REDIRECT_URI_INVALID: { class: 'fatal', exit: ExitCode.USAGE },
  AUTH_REFRESH_REFUSED: { class: 'retriable', exit: ExitCode.FAILURE },
  AUTH_STATE_EXPIRED: { class: 'fatal', exit: ExitCode.FAILURE },
  AUTH_STATE_GRANT_MISMATCH: { class: 'fatal', exit: ExitCode.FAILURE },
  AUTH_STATE_MISMATCH: { class: 'fatal', exit: ExitCode.FAILURE },
  AUTH_STATE_REUSED: { class: 'fatal', exit: ExitCode.FAILURE },
  AUTH_STATE_UNKNOWN: { class: 'fatal', exit: ExitCode.FAILURE },
  AUTH_STATIC_TOKEN_REJECTED: { class: 'fatal', exit: ExitCode.FAILURE, healing: 'never' },
  AUTH_STORE_CORRUPT: {
    class: 'fatal',
    exit: ExitCode.FAILURE,
    hint:
      'the token store is damaged or is not a token store: restore it from a backup, or move it away and run ' +
      '`calls-connector auth login` again',
  },
  AUTH_STORE_KEY_BESIDE_DATA: { class: 'fatal', exit: ExitCode.USAGE },
  AUTH_STORE_KEY_INVALID: { class: 'fatal', exit: ExitCode.USAGE },
  AUTH_STORE_KEY_MISMATCH: { class: 'fatal', exit: ExitCode.FAILURE },
  AUTH_STORE_KEY_MISSING: { class: 'fatal', exit: ExitCode.USAGE },
  AUTH_STORE_KEY_WEAK: { class: 'fatal', exit: ExitCode.FAILURE },
  AUTH_STORE_LOCKED: { class: 'retriable', exit: ExitCode.FAILURE },
  AUTH_STORE_REPLAYED: { class: 'fatal', exit: ExitCode.FAILURE },
  AUTH_STORE_TAMPERED: {
    class: 'fatal',
    exit: ExitCode.FAILURE,
    hint:
      'the token store was modified outside the connector: restore it from a backup, or move it away and run ' +
      '`calls-connector auth login` again',
  },
  AUTH_STORE_UNREADABLE: {
    class: 'fatal',
    exit: ExitCode.FAILURE,
    hint: "check oauth.store.path and that the connector's user owns the file (it is created with mode 0600)",
  },
  AUTH_STORE_WRITE_FAILED: { class: 'retriable', exit: ExitCode.FAILURE },
  AUTH_TOKEN_ENDPOINT_UNAVAILABLE: { class: 'retriable', exit: ExitCode.FAILURE },
  AUTH_TOKEN_EXPIRED: { class: 'retriable', exit: ExitCode.FAILURE },
  AUTH_TOKEN_REJECTED_AFTER_REFRESH: { class: 'retriable', exit: ExitCode.FAILURE },
  AUTH_TOKEN_REQUEST_REFUSED: { class: 'fatal', exit: ExitCode.FAILURE },
  AUTH_TOKEN_RESPONSE_INVALID: { class: 'fatal', exit: ExitCode.FAILURE },
  AUTH_TOKEN_RESPONSE_TOO_LARGE: { class: 'retriable', exit: ExitCode.FAILURE },
  CONFIG_BOUNDARY_CAP_TOO_LARGE: { class: 'fatal', exit: ExitCode.USAGE },
  CONFIG_DUPLICATE_LOCATION: { class: 'fatal', exit: ExitCode.USAGE },
  CONFIG_FILE_UNREADABLE: {
    class: 'fatal',
    exit: ExitCode.USAGE,
    hint: "check the path in that key and that the connector's user can read the file",
  },
  CONFIG_INVALID: { class: 'fatal', exit: ExitCode.USAGE },
  CURSOR_LOOP: { class: 'fatal', exit: ExitCode.FAILURE },
  CURSOR_RESTARTS_EXHAUSTED: { class: 'retriable', exit: ExitCode.FAILURE },
  DEMO_AUTHORIZE_FAILED: { class: 'fatal', exit: ExitCode.FAILURE },
  DEMO_FOLDER_UNUSABLE: { class: 'fatal', exit: ExitCode.FAILURE },
  DEVSTACK_START_FAILED: { class: 'fatal', exit: ExitCode.FAILURE },
  DEVSTACK_UNAVAILABLE: { class: 'fatal', exit: ExitCode.FAILURE },
  ITEM_BAD_UPDATED_AT: { class: 'skippable', exit: ExitCode.FAILURE },
  ITEM_NO_UID: { class: 'skippable', exit: ExitCode.FAILURE },
  ITEM_SCHEMA_REJECTED: { class: 'skippable', exit: ExitCode.FAILURE },
  ITEM_TOO_LARGE: { class: 'skippable', exit: ExitCode.FAILURE },
  ITEM_UID_TOO_LONG: { class: 'skippable', exit: ExitCode.FAILURE },
  KAFKA_COMMIT_OUTCOME_UNKNOWN: { class: 'retriable', exit: ExitCode.FAILURE },
  KAFKA_COMPRESSION_UNAVAILABLE: { class: 'fatal', exit: ExitCode.USAGE },
  KAFKA_FENCED_BY_ANOTHER_INSTANCE: { class: 'fatal', exit: ExitCode.FAILURE },
  KAFKA_GROUP_MEMBERSHIP_LOST: {
    class: 'fatal',
    exit: ExitCode.FAILURE,
    hint:
      'every instance of one connector.name must run the same connector.mode (the broker refuses a mix with ' +
      'INCONSISTENT_GROUP_PROTOCOL); check the ACLs (Read on the group <connector.name>-instances) and restart',
  },
  // The instances group could not be read: the producer is not initialised again until it can.
  KAFKA_INSTANCES_UNKNOWN: { class: 'retriable', exit: ExitCode.FAILURE },
  KAFKA_NOT_PERMITTED: {
    class: 'fatal',
    exit: ExitCode.FAILURE,
    hint:
      'SASL_AUTHENTICATION_FAILED: check kafka.sasl.mechanism, username and password; *_AUTHORIZATION_FAILED: ' +
      "grant the connector's principal Describe, Create, DescribeConfigs, Read and Write on the three topics and " +
      'Write and Describe on the transactional id calls-connector.<connector.name>',
  },
  KAFKA_OAUTH_CLIENT_REJECTED: { class: 'fatal', exit: ExitCode.FAILURE },
  KAFKA_OAUTH_SECRET_FILE: { class: 'fatal', exit: ExitCode.USAGE },
  KAFKA_OAUTH_TLS_UNTRUSTED: { class: 'fatal', exit: ExitCode.FAILURE },
  KAFKA_OAUTH_TOKEN_INVALID: { class: 'fatal', exit: ExitCode.FAILURE },
  KAFKA_OAUTH_TOKEN_REFUSED: { class: 'fatal', exit: ExitCode.FAILURE },
  KAFKA_OAUTH_TOKEN_REJECTED: { class: 'fatal', exit: ExitCode.FAILURE },
  KAFKA_OAUTH_TOKEN_UNAVAILABLE: { class: 'retriable', exit: ExitCode.FAILURE },
  KAFKA_OFFSETS_TOPIC_REPARTITIONED: { class: 'fatal', exit: ExitCode.FAILURE },
  KAFKA_OFFSETS_UNSETTLED: { class: 'fatal', exit: ExitCode.FAILURE },
  // A page prepared before the sink's producer was initialised again: nothing written, its location reloads.
  KAFKA_PAGE_FROM_OLD_PRODUCER: { class: 'retriable', exit: ExitCode.FAILURE },
  // Retriable for the pages (their locations move to the new owner); fatal inside the sink's producer lifecycle.
  KAFKA_PARTITION_TAKEN_OVER: { class: ['retriable', 'fatal'], exit: ExitCode.FAILURE },
  KAFKA_PRODUCER_FENCED: { class: 'retriable', exit: ExitCode.FAILURE },
  // exactly-once needs the kafkajs read_committed fix (kafka/client/kafkajs-read-committed-fix.ts).
  KAFKA_READ_COMMITTED_FIX_MISSING: {
    class: 'fatal',
    exit: ExitCode.FAILURE,
    hint: 'install kafkajs 2.2.4 exactly and import src/cli/main.ts (or kafka/client/kafkajs-read-committed-fix.ts) before kafkajs',
  },
  KAFKA_READ_FAILED: { class: 'retriable', exit: ExitCode.FAILURE },
  KAFKA_READ_TIMEOUT: { class: 'retriable', exit: ExitCode.FAILURE },
  KAFKA_SEND_FAILED: { class: 'retriable', exit: ExitCode.FAILURE },
  KAFKA_SINK_CLOSED: { class: 'retriable', exit: ExitCode.FAILURE },
  KAFKA_TLS_FILE_UNREADABLE: { class: 'fatal', exit: ExitCode.USAGE },
  KAFKA_TOPIC_MISSING: { class: 'fatal', exit: ExitCode.FAILURE },
  KAFKA_TOPIC_NOT_COMPACTED: { class: 'fatal', exit: ExitCode.FAILURE },
  KAFKA_TOPIC_PARTITIONS_MISMATCH: { class: 'fatal', exit: ExitCode.FAILURE },
  KAFKA_TRANSACTION_ABORTED: { class: 'retriable', exit: ExitCode.FAILURE },
  // Not thrown: the warn line of the exactly-once sink ending a hanging transaction of its own (KAFKA-20734,
  // kafka/sinks/hanging-transaction-heal-rule.ts) while it retries a KAFKA_TRANSACTION_OPEN read-back; catalogued so that
  // the runbook's and metrics' references to it stay checked.
  KAFKA_TRANSACTION_HEALED: { class: 'retriable', exit: ExitCode.FAILURE },
  // An offsets read waits for transactions open ahead of it (kafka/topics/stable-offsets.ts); one open for longer
  // than the load timeout: retried, and named for the operator in case it is a hanging transaction.
  KAFKA_TRANSACTION_OPEN: {
    class: 'retriable',
    exit: ExitCode.FAILURE,
    hint: 'wait for its transaction timeout; if it stays open, find it with kafka-transactions.sh describe-producers and end it with kafka-transactions.sh abort (docs/runbook.md#runbook-transaction-open)',
  },
  KAFKA_UNAVAILABLE: {
    class: 'retriable',
    exit: ExitCode.FAILURE,
    hint:
      'check kafka.brokers (host:port reachable from this machine) and that kafka.ssl and kafka.sasl match the ' +
      "brokers' listener (ILLEGAL_SASL_STATE: the listener does not use SASL; SASL_AUTHENTICATION_FAILED: wrong " +
      'kafka.sasl.username/password)',
  },
  METRICS_LISTEN_FAILED: { class: 'fatal', exit: ExitCode.FAILURE },
  // A stored offset read back is neither the last committed one nor the page's: a stale read, never adopted.
  OFFSET_UNREADABLE: { class: 'fatal', exit: ExitCode.FAILURE },
  SANDBOX_LISTEN_FAILED: { class: 'fatal', exit: ExitCode.FAILURE },
  SCHEMA_REGISTRY_AUTH_FAILED: { class: 'fatal', exit: ExitCode.FAILURE },
  SCHEMA_REGISTRY_CA_FILE: { class: 'fatal', exit: ExitCode.USAGE },
  SCHEMA_REGISTRY_REFUSED: { class: 'fatal', exit: ExitCode.FAILURE },
  SCHEMA_REGISTRY_UNAVAILABLE: {
    class: 'retriable',
    exit: ExitCode.FAILURE,
    hint: 'check schemaRegistry.url and that the registry is running; the connector retries',
  },
  SCHEMA_REGISTRY_TLS_UNTRUSTED: { class: 'fatal', exit: ExitCode.FAILURE },
  SCHEMA_REGISTRY_UNREACHABLE: { class: 'retriable', exit: ExitCode.FAILURE },
  SCHEMA_REGISTRY_URL_WRONG: { class: 'fatal', exit: ExitCode.FAILURE },
  SECRET_FILE_TOO_OPEN: { class: 'fatal', exit: ExitCode.FAILURE },
  // An outcome to write before the signals channel opened (runtime/signals/signal-service.ts): written later.
  SIGNALS_NOT_OPEN: { class: 'retriable', exit: ExitCode.FAILURE },
  // A bug inside a sink: the process exits (a supervisor restarts it; distributed partitions move).
  SINK_PROGRAMMER_ERROR: { class: 'fatal', exit: ExitCode.FAILURE },
  // The webhook receiver (webhooks.enabled) cannot bind its port, or its TLS files cannot be read.
  WEBHOOK_LISTEN_FAILED: { class: 'fatal', exit: ExitCode.FAILURE },
  // A single-mode standby refuses a webhook delivery (503, Retry-After) so that the sender retries onto the writer.
  WEBHOOK_STANDING_BY: { class: 'retriable', exit: ExitCode.FAILURE },
  // webhooks.signature names no secret that is set (or one the scheme cannot use).
  WEBHOOK_SECRET_MISSING: {
    class: 'fatal',
    exit: ExitCode.USAGE,
    hint:
      'set the variables webhooks.signature.secretEnv names (or webhooks.signature.secretFiles), in the form the ' +
      'scheme takes (whsec_<base64> for standard-webhooks); only for development: webhooks.allowUnsigned: true',
  },
} as const satisfies Record<string, ErrorCodeEntry>;

export type ErrorCode = keyof typeof ERROR_CODES;
