/**
 * Start-up step 5, ownership: which locations this instance runs, and the sinks they write to.
 *
 * Single mode: all of them, with the session's sink and the offsets it read (membership of the instances group
 * was taken in the Kafka step, before the producer; it only tells `offsets reset` the connector runs, and an
 * older instance that this one is newer).
 * Distributed mode: the group's assignment. The instance joins `<name>-instances` (kafka/group/
 * partition-ownership.ts); each assignment hands partitions of the offsets topic to runtime/partition-handover.ts,
 * which opens that partition's sink, reads its offsets and schedules its locations (and undoes it on
 * revocation); a background loop keeps calls_connector_unowned_locations.
 *
 * Cleanup order (the lifecycle's reverse): the background loop stops and the handover lets every partition go
 * (closing its sink), then the session's sinks close, and only then is the group left: the last page is
 * committed before `offsets reset` may go ahead.
 */
import type { Admin } from 'kafkajs';
import { locationPartition, locationsByPartition } from '../../kafka/group/location-partition.js';
import { PartitionOwnership } from '../../kafka/group/partition-ownership.js';
import type { ConnectorMetrics } from '../../metrics/metrics.js';
import type { Clock } from '../../time/clock.js';
import { PartitionHandover } from '../partition-handover.js';
import type { AssignmentStatus } from '../status.js';
import type { StartContext } from './context.js';
import type { KafkaStep } from './kafka.js';
import type { Locations } from './locations.js';

export interface Ownership {
  /** The offsets-topic partitions owned now (distributed: null until the first assignment arrived). */
  assignment(): AssignmentStatus | null;
}

export async function takeOwnership(
  ctx: StartContext,
  kafka: KafkaStep,
  locations: Locations,
): Promise<Ownership> {
  const { config, logger, metrics, clock, lifecycle, failures } = ctx;
  const { configured, scheduler, syncFor } = locations;
  if (kafka.mode === 'single') {
    const { session } = kafka;
    scheduler.add(
      configured.map((uid) =>
        syncFor(uid, session.initialOffsets.get(uid), session.sink, async () =>
          (await session.offsetStore.loadAll()).get(uid),
        ),
      ),
    );
    const all = await offsetsTopicPartitions(kafka.admin, config.kafka.offsetsTopic);
    metrics.ownedLocations.set(configured.length);
    metrics.ownedPartitions.set(all.length);
    metrics.unownedLocations.set(0);
    return { assignment: () => ({ partitions: all, generationId: null }) };
  }

  const { session, admin } = kafka;
  const { partitionCount } = session;
  const handover = new PartitionHandover({
    locationsByPartition: locationsByPartition(config.connector.name, configured, partitionCount),
    scheduler,
    metrics,
    logger,
    clock,
    revokeBoundMs: config.poll.shutdownTimeoutMs,
    retryDelayMs: config.kafka.groupSessionTimeoutMs,
    work: {
      openSink: (partition, takenOver) => session.openPartitionSink(partition, takenOver),
      loadOffsets: (partitions) => session.loadPartitions(partitions),
      syncFor: (uid, partition, offset, sink) =>
        syncFor(uid, offset, sink, async () => (await session.loadPartitions([partition])).get(uid)),
    },
  });
  const ownership = await PartitionOwnership.join({
    kafka: session.kafka,
    connectorName: config.connector.name,
    offsetsTopic: config.kafka.offsetsTopic,
    sessionTimeoutMs: config.kafka.groupSessionTimeoutMs,
    heartbeatIntervalMs: config.kafka.groupHeartbeatIntervalMs,
    rebalanceTimeoutMs: config.kafka.groupRebalanceTimeoutMs,
    onAssignment: (assignment) => handover.onAssignment(assignment),
    onHeartbeat: () => handover.onHeartbeat(),
    onLost: (error) => failures.membershipLost(error),
    logger,
    clock,
  });
  lifecycle.defer('instances group', () => ownership.leave());
  // Bounded: a commit the scheduler abandoned at its shutdown timeout may still hang on Kafka.
  lifecycle.defer('kafka session', () => session.close(config.poll.shutdownTimeoutMs));
  const stopBackground = new AbortController();
  lifecycle.defer('partitions', async () => {
    stopBackground.abort();
    await handover.close();
  });
  void watchUnowned(ownership, admin, configured, {
    partitionOf: (uid) => locationPartition(config.connector.name, uid, partitionCount),
    metrics,
    clock,
    intervalMs: config.kafka.groupHeartbeatIntervalMs,
    signal: stopBackground.signal,
  });
  return {
    assignment: () => {
      const current = ownership.assignment;
      return current === null
        ? null
        : { partitions: handover.partitions, generationId: current.generationId };
    },
  };
}

/** The partition ids of the offsets topic (single mode owns them all). */
async function offsetsTopicPartitions(admin: Admin, topic: string): Promise<number[]> {
  const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
  return (topics[0]?.partitions ?? []).map((p) => p.partitionId).sort((a, b) => a - b);
}

/**
 * Keeps calls_connector_unowned_locations: every `intervalMs`, the configured locations whose partition no
 * member of the group owns (kept as it was while the group rebalances, or when the group cannot be described).
 */
async function watchUnowned(
  ownership: PartitionOwnership,
  admin: Parameters<PartitionOwnership['ownedByGroup']>[0],
  configured: readonly string[],
  options: {
    partitionOf: (uid: string) => number;
    metrics: ConnectorMetrics;
    clock: Clock;
    intervalMs: number;
    signal: AbortSignal;
  },
): Promise<void> {
  const partitions = configured.map(options.partitionOf);
  options.metrics.unownedLocations.set(configured.length);
  while (!options.signal.aborted) {
    try {
      const owned = await ownership.ownedByGroup(admin);
      if (owned !== null)
        options.metrics.unownedLocations.set(partitions.filter((p) => !owned.has(p)).length);
    } catch {
      // Kafka unavailable: the gauge keeps its last value; the kafka readiness check says why.
    }
    await options.clock.sleep(options.intervalMs, options.signal).catch(() => undefined);
  }
}
