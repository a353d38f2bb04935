/**
 * Start-up step 6, heartbeats (optional, kafka.heartbeatIntervalMs > 0): each location's state published to the
 * heartbeat topic (kafka/heartbeats/heartbeats.ts). Opened last, so it is stopped first.
 */
import type { KafkaClient } from '../../kafka/client/port.js';
import { ensureHeartbeatTopic, HeartbeatPublisher } from '../../kafka/heartbeats/heartbeats.js';
import type { Scheduler } from '../../sync/scheduler/scheduler.js';
import type { StartContext } from './context.js';

export async function startHeartbeats(
  ctx: StartContext,
  kafka: KafkaClient,
  scheduler: Pick<Scheduler, 'status'>,
): Promise<void> {
  const { config, metrics, logger, clock, lifecycle } = ctx;
  if (config.kafka.heartbeatIntervalMs <= 0) return;
  await ensureHeartbeatTopic(kafka, config.kafka);
  const publisher = new HeartbeatPublisher({
    kafka,
    topic: config.kafka.heartbeatTopic,
    intervalMs: config.kafka.heartbeatIntervalMs,
    connectorName: config.connector.name,
    locations: () => scheduler.status(),
    metrics,
    logger,
    clock,
  });
  await publisher.start();
  lifecycle.defer('heartbeats', () => publisher.stop());
}
