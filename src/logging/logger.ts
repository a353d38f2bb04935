/**
 * Structured logging (pino): one JSON line per event, or human-readable lines on a terminal.
 *
 * Secrets are redacted by key wherever they appear in a logged object, so a careless
 * `log.info({ config })` cannot leak them. Messages themselves must never interpolate a secret; as a last
 * line of defence every serialized line is scrubbed of URL userinfo and `Bearer`/`Basic` credentials
 * (they reach a line inside strings: a config URL, an error message, a cause appended by the `err`
 * serializer).
 */
import { pino, type Logger, type LoggerOptions } from 'pino';
import { scrubSecretsInText } from './scrub-text.js';

export type { Logger } from 'pino';

/** Keys whose values are never logged, at any depth pino's redaction reaches. */
export const SECRET_KEYS = [
  'clientSecret',
  'client_secret',
  'accessToken',
  'access_token',
  'refreshToken',
  'refresh_token',
  'staticToken',
  'password',
  'authorization',
  'Authorization',
  'token',
  'code',
  'key',
];

const redactPaths = SECRET_KEYS.flatMap((k) => [k, `*.${k}`, `*.*.${k}`, `*.*.*.${k}`]);

/**
 * The shape of an error code (`AUTH_GRANT_REVOKED`, `CURSOR_LOOP`, `ECONNREFUSED`): upper case, digits and
 * underscores, with an underscore or short. `code` is a secret key because of the OAuth authorization code,
 * but it is also how every log line names its error, and operators search logs by it: a `code` of this
 * shape is kept, anything else (an authorization code is long and mixed case) is redacted.
 */
const ERROR_CODE = /^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$/;

export function isErrorCodeShaped(value: unknown): boolean {
  return (
    typeof value === 'string' &&
    ERROR_CODE.test(value) &&
    value.length <= 64 &&
    (value.includes('_') || value.length <= 16)
  );
}

function censor(value: unknown, path: string[]): unknown {
  return path.at(-1) === 'code' && isErrorCodeShaped(value) ? value : '[redacted]';
}

export interface LoggerSettings {
  level?: string;
  format?: 'auto' | 'json' | 'pretty';
  /** Where lines go; tests pass a stream to capture output. */
  destination?: NodeJS.WritableStream;
  name?: string;
}

export function createLogger(settings: LoggerSettings = {}): Logger {
  const options: LoggerOptions = {
    name: settings.name ?? 'calls-connector',
    level: settings.level ?? process.env.LOG_LEVEL ?? 'info',
    redact: { paths: redactPaths, censor },
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    hooks: { streamWrite: scrubSecretsInText },
  };
  const format = settings.format ?? 'auto';
  const destination = settings.destination ?? process.stdout;
  const pretty =
    format === 'pretty' || (format === 'auto' && destination === process.stdout && process.stdout.isTTY);
  if (pretty) {
    return pino({
      ...options,
      transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'SYS:HH:MM:ss.l' } },
    });
  }
  return pino(options, destination);
}

/** A logger that drops everything; for library code used without a configured logger. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
