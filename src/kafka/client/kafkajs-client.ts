/**
 * Builds the kafkajs client from the `kafka` config section: brokers, TLS, SASL, compression codecs, client id, and a
 * logCreator that sends kafkajs' own log lines to our pino logger. The handle it returns is the client port's
 * `KafkaClient` (./port.ts): code outside src/kafka/ holds it without knowing it is kafkajs.
 *
 * Contract: called once at start-up (and by one-shot CLI commands). Reads TLS files synchronously so
 * that a missing or unreadable file fails at construction with a FatalError naming the key, not on the
 * first reconnect.
 *
 * Node 24 prints `TimeoutNegativeWarning` once per process with kafkajs 2.2.4. Cause: its RequestQueue
 * computes `throttledUntil - Date.now()` with `throttledUntil = -1` (never throttled) and passes the
 * negative delay to setTimeout whenever no request is pending (https://github.com/tulios/kafkajs/issues/1751;
 * its fixes were never merged, kafkajs is unmaintained). Node clamps the delay to 1 ms, so the warning is harmless in
 * itself, but the timer re-arms itself: every connected broker connection wakes the process every 1 ms
 * while idle (measured here: ~4% of a core for one idle producer, 0.2% without the loop). kafkajs has no
 * option for it, and Node's `--disable-warning=TimeoutNegativeWarning` hides the warning but not the loop, so
 * `createKafka` applies ./kafkajs-idle-timer-fix.ts (skip the timer when nothing is pending or throttled).
 */
// Before kafkajs: the fix must be installed before kafkajs loads (see the module).
import { readCommittedFixInstalled } from './kafkajs-read-committed-fix.js';
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import { Kafka, logLevel, type LogEntry, type Mechanism, type SASLOptions } from 'kafkajs';
import { FatalError } from '../../errors/index.js';
import { applyKafkajsIdleTimerFix } from './kafkajs-idle-timer-fix.js';
import { compressionAvailable, registerCompressionCodecs } from './compression.js';
import { ClientCredentialsTokens, oauthBearerMechanism } from './oauthbearer.js';
import type { KafkaClient } from './port.js';
import { createHttpsDispatcher } from '../../https/dispatcher.js';
import type { Logger } from '../../logging/logger.js';
import type { KafkaConfig } from '../../config/schema.js';

export interface KafkaClientOptions {
  config: KafkaConfig;
  /** Used as the client id when `kafka.clientId` is not set. */
  connectorName: string;
  logger: Logger;
}

export function createKafka({ config, connectorName, logger }: KafkaClientOptions): KafkaClient {
  if (!applyKafkajsIdleTimerFix())
    logger.warn(
      'kafkajs internals changed: the idle timer fix was not applied (see src/kafka/client/kafkajs-idle-timer-fix.ts)',
    );
  if (!readCommittedFixInstalled())
    logger.warn(
      'kafkajs was loaded before its read_committed fix, or its internals changed: reads of a partition with aborted transactions of several producers may see aborted records (see src/kafka/client/kafkajs-read-committed-fix.ts)',
    );
  registerCompressionCodecs();
  if (!compressionAvailable(config.compression))
    throw new FatalError(
      'KAFKA_COMPRESSION_UNAVAILABLE',
      `kafka.compression: ${config.compression} needs Zstandard in node:zlib (Node >= 22.15; this is ${process.version}): upgrade Node or choose gzip, snappy or lz4`,
    );
  const ssl = tlsOptions(config.ssl);
  return new Kafka({
    brokers: config.brokers,
    clientId: config.clientId ?? connectorName,
    ...(ssl === undefined ? {} : { ssl }),
    ...(config.sasl === undefined ? {} : { sasl: saslOptions(config.sasl) }),
    logLevel: kafkajsLevelFor(logger.level),
    logCreator: pinoLogCreator(logger.child({ component: 'kafkajs' })),
  });
}

function tlsOptions(ssl: KafkaConfig['ssl']): boolean | ConnectionOptions | undefined {
  if (ssl === undefined || typeof ssl === 'boolean') return ssl;
  const read = (key: string, file: string | undefined): Buffer | undefined =>
    file === undefined ? undefined : readTlsFile(`kafka.ssl.${key}`, file);
  const ca = read('caFile', ssl.caFile);
  const cert = read('certFile', ssl.certFile);
  const key = read('keyFile', ssl.keyFile);
  return {
    rejectUnauthorized: ssl.rejectUnauthorized,
    ...(ca === undefined ? {} : { ca }),
    ...(cert === undefined ? {} : { cert }),
    ...(key === undefined ? {} : { key }),
  };
}

function readTlsFile(key: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    throw new FatalError(
      'KAFKA_TLS_FILE_UNREADABLE',
      `cannot read ${key} (${file}): fix the path or permissions`,
      {
        cause: error,
      },
    );
  }
}

function saslOptions(sasl: NonNullable<KafkaConfig['sasl']>): SASLOptions | Mechanism {
  if (sasl.mechanism !== 'oauthbearer') {
    const { mechanism, username, password } = sasl;
    return { mechanism, username, password } as SASLOptions;
  }
  const extraCaPem = sasl.caFile === undefined ? undefined : readTlsFile('kafka.sasl.caFile', sasl.caFile);
  const tokens = new ClientCredentialsTokens(
    sasl,
    createHttpsDispatcher({
      extraCaPem: extraCaPem?.toString('utf8'),
      connectTimeoutMs: sasl.requestTimeoutMs,
    }),
  );
  return oauthBearerMechanism(tokens);
}

/** kafkajs formats every line it logs, so ask it only for what pino will keep. */
function kafkajsLevelFor(pinoLevel: string): logLevel {
  switch (pinoLevel) {
    case 'trace':
    case 'debug':
      return logLevel.DEBUG;
    case 'info':
    case 'warn':
      return logLevel.WARN;
    case 'silent':
      return logLevel.NOTHING;
    default:
      return logLevel.ERROR;
  }
}

/**
 * kafkajs INFO lines are client lifecycle chatter (connects, joins), so they go to pino's debug; ERROR
 * lines are mostly retried protocol errors that kafkajs recovers from, so they are warnings for us: the
 * connector logs its own errors where it decides what happens next.
 *
 * kafkajs calls this inside its own work (a consumer's join, a request's answer), so it never throws: an
 * exception here crashes whatever kafkajs was doing. Its protocol traces carry raw Buffers (request and response
 * payloads), which are logged as their size: pino's redaction walks into a Buffer and throws (at trace level
 * that crashed the instances group's consumer, and the instance never joined). Fields that still cannot be
 * logged are dropped, and the line is logged without them.
 */
export function pinoLogCreator(logger: Logger): () => (entry: LogEntry) => void {
  return () =>
    ({ namespace, level, log }) => {
      const { message, timestamp: _timestamp, ...extra } = log;
      const pinoLevel =
        level === logLevel.ERROR || level === logLevel.WARN
          ? 'warn'
          : level === logLevel.INFO
            ? 'debug'
            : 'trace';
      if (!logger.isLevelEnabled(pinoLevel)) return;
      try {
        logger[pinoLevel]({ namespace, ...(loggable(extra, 0) as object) }, message);
      } catch (error) {
        logger[pinoLevel](
          { namespace, fieldsDropped: error instanceof Error ? error.message : String(error) },
          message,
        );
      }
    };
}

/** How deep `loggable` copies a kafkajs log entry; deeper values are summarised. */
const LOGGABLE_DEPTH = 8;

/** A copy of `value` with every Buffer (any typed array) replaced by its size, for pino. */
function loggable(value: unknown, depth: number): unknown {
  if (ArrayBuffer.isView(value)) return `<${value.byteLength} bytes>`;
  if (value === null || typeof value !== 'object' || value instanceof Error) return value;
  if (depth >= LOGGABLE_DEPTH) return '[…]';
  if (Array.isArray(value)) return value.map((item: unknown) => loggable(item, depth + 1));
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, loggable(item, depth + 1)]));
}
