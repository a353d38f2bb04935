/** The schema registry client (@kafkajs/confluent-schema-registry) from the `schemaRegistry` config section. */
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import type { SchemaRegistryConfig } from '../config/schema.js';

export function createSchemaRegistry(config: SchemaRegistryConfig, clientId: string): SchemaRegistry {
  const auth =
    config.username !== undefined && config.password !== undefined
      ? { username: config.username, password: config.password }
      : undefined;
  return new SchemaRegistry({ host: config.url, clientId, ...(auth === undefined ? {} : { auth }) });
}
