/**
 * The schema registry client (@kafkajs/confluent-schema-registry) from the `schemaRegistry` config section.
 * An https:// registry is verified against the system's roots plus `schemaRegistry.caFile` when set; the
 * client's HTTP layer (mappersmith over node:https) takes that trust as an https.Agent.
 */
import { readFileSync } from 'node:fs';
import { Agent } from 'node:https';
import { rootCertificates } from 'node:tls';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import type { SchemaRegistryConfig } from '../../config/schema.js';
import { FatalError } from '../../errors/index.js';

/**
 * The PEM of `schemaRegistry.caFile` (undefined when unset), read synchronously at start-up so that a
 * missing file fails there, naming the key.
 */
export function readRegistryCaFile(config: Pick<SchemaRegistryConfig, 'caFile'>): string | undefined {
  if (config.caFile === undefined) return undefined;
  try {
    return readFileSync(config.caFile, 'utf8');
  } catch (error) {
    throw new FatalError(
      'SCHEMA_REGISTRY_CA_FILE',
      `cannot read schemaRegistry.caFile (${config.caFile}): fix the path or permissions`,
      { cause: error },
    );
  }
}

export function createSchemaRegistry(config: SchemaRegistryConfig, clientId: string): SchemaRegistry {
  const auth =
    config.username !== undefined && config.password !== undefined
      ? { username: config.username, password: config.password }
      : undefined;
  const ca = readRegistryCaFile(config);
  // Keep-alive as the client's default agent has it; rejectUnauthorized is Node's default (true).
  const agent = ca === undefined ? undefined : new Agent({ keepAlive: true, ca: [...rootCertificates, ca] });
  return new SchemaRegistry({
    host: config.url,
    clientId,
    ...(auth === undefined ? {} : { auth }),
    ...(agent === undefined ? {} : { agent }),
  });
}
