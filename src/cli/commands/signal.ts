/**
 * `calls-connector signal <kind> --config F --location L [--since T] [--until T] [--to T] [--wait]`: sends a
 * signal to the running connector through its signals topic (kafka/signals/signal-topic.ts).
 *
 *   backfill --location L [--since T] [--until T]   read that range of L's calls again, beside its live polls
 *   pause    --location L                            stop polling L until resumed
 *   resume   --location L                            poll L again
 *   reset    --location L [--to T]                  set L's offset to start at T (absent: start over), running
 *
 * Prints the signal's id alone on the first line of stdout (for scripts). With --wait it then reads the topic for
 * the signal's outcome and prints each state as a line `<state> <at> <instance>[ <code>: <reason>]` until a final
 * one (done or refused), or gives up after --timeout with a message saying the signal is still pending.
 * Exit codes: 0 sent (or, with --wait, done); 2 bad arguments or config; 3 refused, or no final outcome within
 * --timeout; 1 Kafka failure.
 */
import { randomUUID } from 'node:crypto';
import { hostname, userInfo } from 'node:os';
import { InvalidArgumentError, type Command } from 'commander';
import { loadConfig } from '../../config/load.js';
import { parseDurationMs } from '../../config/duration.js';
import type { ConnectorConfig } from '../../config/schema.js';
import { ExitCode } from '../../errors/exit-codes.js';
import { createKafka } from '../../kafka/client/kafkajs-client.js';
import { SignalLedger } from '../../kafka/signals/signal-ledger.js';
import {
  checkSignalRequest,
  isFinal,
  SIGNAL_KINDS,
  type Signal,
  type SignalOutcome,
  type SignalRequest,
} from '../../kafka/signals/signal-model.js';
import { SignalTopicReader } from '../../kafka/signals/signal-reader.js';
import { ensureSignalTopic, SignalTopicWriter } from '../../kafka/signals/signal-topic.js';
import { signalsTopicName } from '../../kafka/topics/topics.js';
import { createLogger, type Logger } from '../../logging/logger.js';
import { systemClock, TIMED_OUT, withTimeout } from '../../time/clock.js';
import { examples } from '../help-text.js';
import { talkingToKafka } from '../talking-to-kafka.js';

export interface SignalOptions {
  location?: string;
  since?: string;
  until?: string;
  to?: string;
  wait?: boolean;
  /** How long --wait waits for a final outcome. */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 60_000;

/** One line per outcome: `<state> <at> <instance>`, a refusal with its code and reason. */
export function describeOutcome(outcome: SignalOutcome): string {
  const reason = outcome.reason === undefined ? '' : ` ${outcome.reason.code}: ${outcome.reason.message}`;
  return `${outcome.state} ${outcome.at} ${outcome.instance}${reason}`;
}

/** Who sends the signal, as the record names it (for the log and /status only). */
function sender(): string {
  try {
    return `${userInfo().username}@${hostname()}`;
  } catch {
    // No passwd entry for the uid (a container run as an arbitrary user).
    return `uid-${process.getuid?.() ?? 'unknown'}@${hostname()}`;
  }
}

function quietLogger(config: ConnectorConfig): Logger {
  // kafkajs' retried errors are noise for a one-shot command: only errors, unless debugging.
  return createLogger({
    level: ['debug', 'trace'].includes(config.logging.level) ? config.logging.level : 'error',
    format: 'json',
    destination: process.stderr,
  });
}

export async function sendSignal(configFile: string, kind: string, options: SignalOptions): Promise<number> {
  const checked = checkSignalRequest({ kind, ...options }, systemClock.now());
  if (!checked.ok) {
    process.stderr.write(`calls-connector signal: ${checked.problems.join('; ')}\n`);
    return ExitCode.USAGE;
  }
  const config = await loadConfig(configFile);
  const logger = quietLogger(config);
  const kafka = createKafka({ config: config.kafka, connectorName: config.connector.name, logger });
  const topic = signalsTopicName(config.kafka.offsetsTopic);
  const partitionCount = await talkingToKafka(() => ensureSignalTopic(kafka, config.kafka));
  const signal: Signal = {
    ...checked.value,
    id: randomUUID(),
    requestedAt: new Date(systemClock.now()).toISOString(),
    requestedBy: sender(),
  };
  if (!config.sources.some((s) => s.locations.some((l) => l.toLowerCase() === signal.location.toLowerCase())))
    process.stderr.write(
      `calls-connector signal: location ${signal.location} is not in this configuration's sources: ` +
        'the running instances refuse it unless their configuration lists it\n',
    );
  await talkingToKafka(async () => {
    const writer = await SignalTopicWriter.connect(kafka, {
      topic,
      connectorName: config.connector.name,
      partitionCount,
    });
    try {
      await writer.send(signal);
    } finally {
      await writer.disconnect();
    }
  });
  process.stdout.write(`${signal.id}\n`);
  process.stderr.write(`${describeRequest(signal)}: sent to ${topic}\n`);
  if (options.wait !== true) return ExitCode.OK;
  return waitForOutcome(kafka, config, signal, options.timeoutMs ?? DEFAULT_TIMEOUT_MS, logger);
}

function describeRequest(request: SignalRequest): string {
  const range = [
    request.since === undefined ? '' : ` since ${request.since}`,
    request.until === undefined ? '' : ` until ${request.until}`,
    request.to === undefined ? '' : ` to ${request.to}`,
  ].join('');
  return `${request.kind} of location ${request.location}${range}`;
}

async function waitForOutcome(
  kafka: ReturnType<typeof createKafka>,
  config: ConnectorConfig,
  signal: Signal,
  timeoutMs: number,
  logger: Logger,
): Promise<number> {
  const ledger = new SignalLedger();
  let printed: SignalOutcome | undefined;
  let settle: (outcome: SignalOutcome) => void = () => undefined;
  const final = new Promise<SignalOutcome>((resolve) => (settle = resolve));
  const reader = new SignalTopicReader(kafka, {
    topic: signalsTopicName(config.kafka.offsetsTopic),
    connectorName: config.connector.name,
    groupIdPrefix: `${config.kafka.clientId ?? config.connector.name}-signal-wait`,
    loadTimeoutMs: config.kafka.offsetsLoadTimeoutMs,
    logger,
    each: (entry) => {
      ledger.apply(entry);
      const outcome = ledger.outcome(signal.id);
      if (outcome === undefined || outcome.state === printed?.state) return;
      printed = outcome;
      process.stdout.write(`${describeOutcome(outcome)}\n`);
      if (isFinal(outcome.state)) settle(outcome);
    },
  });
  try {
    await talkingToKafka(() => reader.start());
    const outcome = await withTimeout(systemClock, final, timeoutMs);
    if (outcome === TIMED_OUT) {
      process.stderr.write(
        `calls-connector signal: no final outcome for ${signal.id} within ${timeoutMs / 1000} s ` +
          `(${printed === undefined ? 'no instance has answered it yet' : `last: ${printed.state}`}). It stays in the ` +
          'signals topic and is carried out when the instance owning the location reads it: is the connector running?\n',
      );
      return ExitCode.NOT_READY;
    }
    return outcome.state === 'done' ? ExitCode.OK : ExitCode.NOT_READY;
  } finally {
    await reader.stop();
  }
}

function duration(value: string): number {
  const ms = parseDurationMs(value);
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms <= 0)
    throw new InvalidArgumentError('expected a duration such as 30s, 5m or 1h');
  return ms;
}

export function register(program: Command): void {
  program
    .command('signal')
    .description(
      `Send a signal to the running connector (${SIGNAL_KINDS.join(', ')}) and print its id; --wait prints its outcome.`,
    )
    .argument('<kind>', `one of ${SIGNAL_KINDS.join(', ')}`)
    .requiredOption('-c, --config <file>', 'YAML configuration file')
    .requiredOption('-l, --location <uid>', 'the location the signal is about')
    .option('--since <time>', 'backfill: read again from this RFC 3339 date-time (default: the start)')
    .option('--until <time>', 'backfill: read again up to this RFC 3339 date-time (default: now)')
    .option('--to <time>', 'reset: the offset starts at since=<time> (default: start over)')
    .option('--wait', 'wait for the outcome (done or refused) and print each state')
    .option('--timeout <duration>', 'with --wait: give up after this long (default 60s)', duration)
    .addHelpText(
      'after',
      examples(
        'calls-connector signal backfill --config connector.yaml --location 6f1c2c36-9f59-4f3e-8a53-3c1f1e0c6a11 --since 2024-05-01T00:00:00Z --until 2024-05-02T00:00:00Z',
        'calls-connector signal pause --config connector.yaml --location 6f1c2c36-9f59-4f3e-8a53-3c1f1e0c6a11 --wait',
        'calls-connector signal reset --config connector.yaml --location 6f1c2c36-9f59-4f3e-8a53-3c1f1e0c6a11 --to 2024-05-01T00:00:00Z',
      ) +
        '\nExit codes: 0 sent (with --wait: done), 2 invalid arguments, 3 refused or no outcome in time, 1 Kafka failure.\n',
    )
    .action(async (kind: string, options: SignalOptions & { config: string; timeout?: number }) => {
      const { config, timeout, ...rest } = options;
      process.exitCode = await sendSignal(config, kind, {
        ...rest,
        ...(timeout !== undefined && { timeoutMs: timeout }),
      });
    });
}
