/**
 * `calls-connector tail --config FILE`: prints the calls topic as JSON lines, decoded through the schema
 * registry, as a read_committed consumer sees it (what downstream consumers get). For demos and debugging.
 * Each line: topic, partition, offset, timestamp (ISO), key, headers (as text) and the value. With
 * `--dead-letters` it reads the dead-letter topic instead, whose values are JSON text, not Avro.
 */
import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import { wholeNumber } from '../option-parsers.js';
import { loadConfig } from '../../config/load.js';
import { createKafka } from '../../kafka/client/kafkajs-client.js';
import { topicConsumer, type ConsumedRecord, type RecordHeaders } from '../../kafka/client/port.js';
import { createSchemaRegistry } from '../../kafka/avro/registry.js';
import { createLogger } from '../../logging/logger.js';
import { shutdownSignal } from './run.js';
import { RetriableError } from '../../errors/index.js';
import { asKafkaFailure, talkingToKafka } from '../talking-to-kafka.js';

export function register(program: Command): void {
  program
    .command('tail')
    .description('Print the calls topic as JSON lines (Avro decoded through the registry, read_committed).')
    .requiredOption('-c, --config <file>', 'YAML configuration file')
    .option('--from-beginning', 'start at the oldest record instead of new ones')
    .option('--max <n>', 'stop after this many records', wholeNumber(1))
    .option('--dead-letters', 'read the dead-letter topic (kafka.dlqTopic) instead of the calls topic')
    .addHelpText(
      'after',
      '\nExamples:\n  $ calls-connector tail --config config.yaml --from-beginning --max 10\n' +
        '  $ calls-connector tail --config config.yaml --dead-letters --from-beginning\n',
    )
    .action(
      async (options: { config: string; fromBeginning?: boolean; max?: number; deadLetters?: boolean }) => {
        const config = await loadConfig(options.config);
        const topic = options.deadLetters === true ? config.kafka.dlqTopic : config.kafka.topic;
        const logger = createLogger({ level: 'warn', format: 'json', destination: process.stderr });
        const kafka = createKafka({ config: config.kafka, connectorName: config.connector.name, logger });
        const registry = createSchemaRegistry(
          config.schemaRegistry,
          config.kafka.clientId ?? config.connector.name,
        );
        const decodeAvro = (value: Buffer, partition: number, offset: string): Promise<unknown> =>
          registry.decode(value).catch((error: unknown) => {
            throw new RetriableError(
              'SCHEMA_REGISTRY_UNAVAILABLE',
              `cannot decode the record at partition ${partition} offset ${offset} through the schema registry: ${error instanceof Error ? error.message : String(error)}`,
              { cause: error },
            );
          });
        // A throw-away group that never commits: tail never moves anybody's position.
        const consumer = topicConsumer(kafka, `${config.connector.name}-tail-${randomUUID()}`);
        const stop = shutdownSignal(() => undefined);
        let seen = 0;
        try {
          await talkingToKafka(async () => {
            await consumer.connect();
            await consumer.subscribe(topic, { fromBeginning: options.fromBeginning ?? false });
          });
          await new Promise<void>((done, fail) => {
            stop.signal.addEventListener('abort', () => done(), { once: true });
            consumer
              .run(async (partition, message) => {
                if (stop.signal.aborted || message.value === null) return;
                const value =
                  options.deadLetters === true
                    ? jsonOrText(message.value)
                    : await decodeAvro(message.value, partition, message.offset);
                process.stdout.write(`${JSON.stringify(tailLine(topic, partition, message, value))}\n`);
                seen += 1;
                if (options.max !== undefined && seen >= options.max) done();
              })
              .catch((error: unknown) => fail(asKafkaFailure(error)));
          });
        } finally {
          stop.dispose();
          await consumer.disconnect().catch(() => undefined);
        }
      },
    );
}

/** One output line: where the record is, when it was written, its key and headers as text, and its value. */
export function tailLine(topic: string, partition: number, message: ConsumedRecord, value: unknown): object {
  return {
    topic,
    partition,
    offset: message.offset,
    timestamp: new Date(Number(message.timestamp)).toISOString(),
    key: message.key?.toString('utf8') ?? null,
    headers: headersAsText(message.headers),
    value,
  };
}

function headersAsText(headers: RecordHeaders | undefined): Record<string, string | string[]> {
  const text: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (value === undefined) continue;
    text[name] = Array.isArray(value) ? value.map((v) => v.toString()) : value.toString();
  }
  return text;
}

function jsonOrText(value: Buffer): unknown {
  const text = value.toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
