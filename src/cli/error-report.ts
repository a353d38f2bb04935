/**
 * How the CLI reports an error that ends a command: one line naming the code and what went wrong, one
 * "what to do" line when the message itself does not already say it, and the exit code scripts rely on
 * (README "Exit codes"). Called by `main` only, for errors that reach the top of a command.
 *
 * The hints live here, not in the modules that throw, because they are about the operator's next step
 * from the command line (which config key, which command), and one table keeps them consistent.
 */
import { ConnectorError } from '../errors/index.js';
import { scrubSecretsInText } from '../logging/scrub-text.js';
import { ExitCode } from './exit-codes.js';

/**
 * Codes that mean "the configuration (or a file or variable it names) is wrong; nothing was attempted
 * that a retry would fix": exit 2 like a config that does not validate.
 */
export const CONFIGURATION_ERROR_CODES: ReadonlySet<string> = new Set([
  'CONFIG_INVALID',
  'CONFIG_FILE_UNREADABLE',
  'CONFIG_DUPLICATE_LOCATION',
  'AUTH_NOT_CONFIGURED',
  'AUTH_CLIENT_SECRET_MISSING',
  'AUTH_STORE_KEY_MISSING',
  'AUTH_STORE_KEY_INVALID',
  'AUTH_STORE_KEY_BESIDE_DATA',
  'AUTH_REDIRECT_URI_INVALID',
  'AUTH_ENDPOINT_NOT_HTTPS',
  'AUTH_CALLBACK_TLS_INCOMPLETE',
  'AUTH_CALLBACK_TLS_UNREADABLE',
  'AUTH_CALLBACK_NOT_LOCAL',
  'API_CA_FILE',
  'API_INSECURE_URL',
  'API_BAD_URL',
  'KAFKA_TLS_FILE_UNREADABLE',
  'CONFIG_BOUNDARY_CAP_TOO_LARGE',
]);

/** Codes that mean a person pressed Ctrl-C during a one-shot command: exit 130, as a shell reports SIGINT. */
const INTERRUPTED_ERROR_CODES: ReadonlySet<string> = new Set(['AUTH_LOGIN_ABORTED']);

/** What to do next, by code, for errors whose message says what failed but not what to change. */
const HINTS: Readonly<Record<string, string>> = {
  KAFKA_UNAVAILABLE:
    'check kafka.brokers (host:port reachable from this machine) and that kafka.ssl and kafka.sasl match the ' +
    "brokers' listener (ILLEGAL_SASL_STATE: the listener does not use SASL; SASL_AUTHENTICATION_FAILED: wrong " +
    'kafka.sasl.username/password)',
  KAFKA_NOT_PERMITTED:
    'SASL_AUTHENTICATION_FAILED: check kafka.sasl.mechanism, username and password; *_AUTHORIZATION_FAILED: ' +
    "grant the connector's principal Describe, Create, DescribeConfigs, Read and Write on the three topics and " +
    'Write and Describe on the transactional id calls-connector.<connector.name>',
  SCHEMA_REGISTRY_UNAVAILABLE:
    'check schemaRegistry.url and that the registry is running; the connector retries',
  AUTH_STORE_CORRUPT:
    'the token store is damaged or is not a token store: restore it from a backup, or move it away and run ' +
    '`calls-connector auth login` again',
  AUTH_STORE_TAMPERED:
    'the token store was modified outside the connector: restore it from a backup, or move it away and run ' +
    '`calls-connector auth login` again',
  AUTH_STORE_UNREADABLE:
    "check oauth.store.path and that the connector's user owns the file (it is created with mode 0600)",
  AUTH_CALLBACK_LISTEN_FAILED:
    "free the redirect_uri's port (another `auth login`?), or pass --listen HOST:PORT when the redirect " +
    'reaches this machine through a proxy',
  CONFIG_FILE_UNREADABLE: "check the path in that key and that the connector's user can read the file",
};

export interface ErrorReport {
  /** Lines for stderr, without a trailing newline, secrets scrubbed. */
  text: string;
  exitCode: number;
}

export function reportError(error: ConnectorError): ErrorReport {
  const hint = HINTS[error.code];
  const lines = [`calls-connector: [${error.code}] ${error.message}`];
  if (hint !== undefined) lines.push(`  what to do: ${hint}`);
  return {
    text: scrubSecretsInText(lines.join('\n')),
    exitCode: CONFIGURATION_ERROR_CODES.has(error.code)
      ? ExitCode.USAGE
      : INTERRUPTED_ERROR_CODES.has(error.code)
        ? ExitCode.INTERRUPTED
        : ExitCode.FAILURE,
  };
}
