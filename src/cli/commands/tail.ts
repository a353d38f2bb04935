/**
 * `calls-connector tail --config FILE`: prints the calls topic as JSON lines, decoded through the schema
 * registry, as a read_committed consumer sees it (what downstream consumers get). For demos and debugging.
 */
import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import { wholeNumber } from '../option-parsers.js';
import { loadConfig } from '../../config/load.js';
import { createKafka } from '../../kafka/client.js';
import { createSchemaRegistry } from '../../kafka/registry.js';
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
    .addHelpText(
      'after',
      '\nExamples:\n  $ calls-connector tail --config config.yaml --from-beginning --max 10\n',
    )
    .action(async (options: { config: string; fromBeginning?: boolean; max?: number }) => {
      const config = await loadConfig(options.config);
      const logger = createLogger({ level: 'warn', format: 'json', destination: process.stderr });
      const kafka = createKafka({ config: config.kafka, connectorName: config.connector.name, logger });
      const registry = createSchemaRegistry(
        config.schemaRegistry,
        config.kafka.clientId ?? config.connector.name,
      );
      // A throw-away group that never commits: tail never moves anybody's position.
      const consumer = kafka.consumer({ groupId: `${config.connector.name}-tail-${randomUUID()}` });
      const stop = shutdownSignal(() => undefined);
      let seen = 0;
      try {
        await talkingToKafka(async () => {
          await consumer.connect();
          await consumer.subscribe({
            topic: config.kafka.topic,
            fromBeginning: options.fromBeginning ?? false,
          });
        });
        await new Promise<void>((done, fail) => {
          stop.signal.addEventListener('abort', () => done(), { once: true });
          consumer
            .run({
              autoCommit: false,
              eachMessage: async ({ message, partition }) => {
                if (stop.signal.aborted || message.value === null) return;
                const value = (await registry.decode(message.value).catch((error: unknown) => {
                  throw new RetriableError(
                    'SCHEMA_REGISTRY_UNAVAILABLE',
                    `cannot decode the record at partition ${partition} offset ${message.offset} through the schema registry: ${error instanceof Error ? error.message : String(error)}`,
                    { cause: error },
                  );
                })) as Record<string, unknown>;
                process.stdout.write(
                  `${JSON.stringify({ partition, offset: message.offset, key: message.key?.toString('utf8') ?? null, value })}\n`,
                );
                seen += 1;
                if (options.max !== undefined && seen >= options.max) done();
              },
            })
            .catch((error: unknown) => fail(asKafkaFailure(error)));
        });
      } finally {
        stop.dispose();
        await consumer.disconnect().catch(() => undefined);
      }
    });
}
