/**
 * Which backend the token store keeps its sealed entries in, as `oauth.store` says: one file (one instance at
 * a time), or a compacted Kafka topic that several instances share (kafka/token-store/). The choice is made
 * here, in the wiring, so that auth/ knows only its port (EntryBackend) and imports nothing of Kafka.
 *
 * `run` hands its Kafka client in; the `auth` commands and the demo have none, and one is built from the
 * `kafka` section when the store is a topic.
 */
import type { EntryBackend } from '../auth/store/token-store.js';
import { FileBackend } from '../auth/store/file-backend.js';
import type { ConnectorConfig, OAuthConfig } from '../config/schema.js';
import { createKafka } from '../kafka/client/kafkajs-client.js';
import type { KafkaClient } from '../kafka/client/port.js';
import { TokenTopicBackend } from '../kafka/token-store/token-topic-backend.js';
import { silentLogger, type Logger } from '../logging/logger.js';
import type { Clock } from '../time/clock.js';

export interface TokenStoreBackendDependencies {
  /** The Kafka client of a topic store; built from `config.kafka` when absent. */
  kafka?: KafkaClient | undefined;
  logger?: Logger | undefined;
  /** The file store's lock waits (default: the system clock). */
  clock?: Clock | undefined;
}

/** For openOAuth's `backendFor`: the backend of the store `oauth.store` names. */
export function tokenStoreBackend(
  config: ConnectorConfig,
  deps: TokenStoreBackendDependencies = {},
): (store: OAuthConfig['store']) => EntryBackend {
  return (store) => {
    if (store.type === 'file')
      return new FileBackend({ path: store.path, ...(deps.clock && { clock: deps.clock }) });
    const logger = deps.logger ?? silentLogger();
    return new TokenTopicBackend({
      kafka:
        deps.kafka ?? createKafka({ config: config.kafka, connectorName: config.connector.name, logger }),
      topic: store.topic,
      groupIdPrefix: `${config.kafka.clientId ?? config.connector.name}-reader-tokens`,
      replicationFactor: config.kafka.replicationFactor,
      createTopic: config.kafka.createTopics,
    });
  };
}
