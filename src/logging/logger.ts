/**
 * Structured logging (pino): one JSON line per event, or human-readable lines on a terminal.
 *
 * Secrets are redacted by key wherever they appear in a logged object, so a careless
 * `log.info({ config })` cannot leak them. Messages themselves must never interpolate a secret.
 */
import { pino, type Logger, type LoggerOptions } from 'pino';

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
    redact: { paths: redactPaths, censor: '[redacted]' },
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
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
