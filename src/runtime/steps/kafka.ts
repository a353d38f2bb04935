/**
 * Start-up step 2, Kafka: topics, schemas, the offset store and the offsets topic's partition count
 * (kafka/session.ts, ScopedKafkaSession), waited for while the cluster is down (KAFKA_UNAVAILABLE is retriable,
 * like the registry), and one admin client for the readiness check. It opens no producer and reads no offsets:
 * the ownership step opens each producer scope's sink as it takes the scope's partitions over, once this
 * instance is a member of the instances group. The sinks' settings are mapped from configuration here
 * (`sinkSettings`).
 */
import type { ConnectorConfig } from '../../config/schema.js';
import { compressionType } from '../../kafka/client/compression.js';
import type { KafkaAdmin } from '../../kafka/client/port.js';
import { ScopedKafkaSession } from '../../kafka/session.js';
import type { SinkSettings } from '../../kafka/sinks/sink-factory.js';
import { waitUntilAvailable } from '../wait-until-available.js';
import type { StartContext } from './context.js';

export interface KafkaStep {
  session: ScopedKafkaSession;
  admin: KafkaAdmin;
}

export async function openKafka(ctx: StartContext): Promise<KafkaStep> {
  const { config, logger, metrics, clock, lifecycle, failures } = ctx;
  const session = await waitUntilAvailable(
    () =>
      ScopedKafkaSession.start({
        config,
        boundaryCap: config.poll.boundaryCap,
        sinks: sinkSettings(config.kafka),
        logger,
        metrics,
        clock,
        onFatal: (error) => failures.fail(error),
      }),
    { logger, clock, ...(ctx.signal && { signal: ctx.signal }), what: 'the Kafka cluster' },
  );
  const admin = session.kafka.admin();
  await admin.connect();
  lifecycle.defer('kafka admin', () => admin.disconnect());
  return { session, admin };
}

/** The sinks' settings from the `kafka` section (the same for every producer scope). */
export function sinkSettings(kafka: ConnectorConfig['kafka']): SinkSettings {
  return {
    compression: compressionType(kafka.compression),
    transactionTimeoutMs: kafka.transactionTimeoutMs,
    maxPagesPerTransaction: kafka.maxPagesPerTransaction,
    fencing: { limit: kafka.fencedRebuildLimit, windowMs: kafka.fencedWindowMs },
  };
}
