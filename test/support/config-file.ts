/** Writes a connector configuration file to a fresh temporary directory, for the CLI's `--config`. */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { KafkaConfig } from '../../src/config/schema.js';
import { stackEndpoints } from './stack.js';

/** The path of a new YAML file holding `document` (an object, or YAML lines written as they are). */
export async function configFile(document: Record<string, unknown> | readonly string[]): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'calls-config-'));
  const file = join(dir, 'connector.yaml');
  await writeFile(file, Array.isArray(document) ? document.join('\n') : stringify(document));
  return file;
}

/**
 * A configuration for the CLI's Kafka commands (offsets, tail) on a test's topics and the integration stack's
 * registry; its API is never called.
 */
export function kafkaCommandsConfig(
  connectorName: string,
  kafka: Pick<KafkaConfig, 'brokers' | 'topic' | 'offsetsTopic' | 'dlqTopic'>,
  locations: readonly string[],
): Promise<string> {
  return configFile({
    connector: { name: connectorName },
    api: { baseUrl: 'https://127.0.0.1:1' },
    auth: { staticToken: 'test-token' },
    sources: [{ locations: [...locations] }],
    kafka: {
      brokers: kafka.brokers,
      topic: kafka.topic,
      offsetsTopic: kafka.offsetsTopic,
      dlqTopic: kafka.dlqTopic,
    },
    schemaRegistry: { url: stackEndpoints().registryUrl },
  });
}
