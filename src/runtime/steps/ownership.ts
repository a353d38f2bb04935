/**
 * Start-up step 5, ownership: which locations this instance runs, and the sinks they write to. Both modes go
 * through one seam, runtime/partition-handover.ts: partitions of the offsets topic are taken over (a producer
 * scope's sink opened, THEN its offsets read, then its locations scheduled) and let go. Only the assignment and
 * the producer scopes differ:
 *
 * - single mode: one fixed assignment, every partition, in one producer scope (the connector's transactional id,
 *   whose sink asks the instances group before every initialisation whether this is the newest instance, by the
 *   start stamp each member of `<name>-instances` carries: kafka/group/start-stamp.ts); its offsets are the whole
 *   topic's. Taken over at start by the writer (a scheduler, the scope's sink, its locations), and again each time
 *   a standby takes over: a writer stood down by a newer instance is closed, and a new one opened once no newer
 *   instance is a member of the group (runtime/writer-role.ts). A takeover at start that fails is waited for
 *   (Kafka unavailable, the group not settled yet) or ends the start, except when a failure was reported
 *   meanwhile: a newer instance runs (this one then stands by, holding nothing: an instance paused during its
 *   start and woken after its replacement took over must not fence it), or the membership was refused or lost.
 * - distributed mode: the instances group's assignments (sticky assignor), one producer scope per partition
 *   (`…-p<P>`: any producer loss drops P, and the handover takes it again only through the group); its offsets
 *   are its partition's. A background loop keeps calls_connector_unowned_locations.
 *
 * Cleanup order (the lifecycle's reverse): the background loop stops and the handover (single mode: the current
 * writer's) lets every partition go (closing its sinks, the last page committed or aborted), then the shared
 * at-least-once sink closes, and only then is the group left: `offsets reset` cannot go ahead while a page may
 * still commit.
 */
import type { KafkaAdmin } from '../../kafka/client/port.js';
import { locationPartition, locationsByPartition } from '../../kafka/group/location-partition.js';
import { InstancePresence } from '../../kafka/group/instance-presence.js';
import type { OffsetScope, ScopedKafkaSession } from '../../kafka/session.js';
import type { ConnectorMetrics } from '../../metrics/metrics.js';
import type { Scheduler } from '../../sync/scheduler/scheduler.js';
import type { Clock } from '../../time/clock.js';
import { Lifecycle } from '../lifecycle.js';
import { PartitionHandover, type PartitionSink } from '../partition-handover.js';
import type { AssignmentStatus } from '../status.js';
import { waitUntilAvailable } from '../wait-until-available.js';
import { DistributedWriter } from '../distributed-writer.js';
import type { InstanceWriter, Writer } from '../instance-writer.js';
import { TAKEOVER_INITIALISATION, WriterRole } from '../writer-role.js';
import type { StartContext } from './context.js';
import type { KafkaStep } from './kafka.js';
import type { Locations } from './locations.js';
/** The gauge of locations no instance owns. */
export type UnownedGaugeMetrics = Pick<ConnectorMetrics, 'unownedLocations'>;

export interface Ownership {
  /** The offsets-topic partitions owned now (distributed: null until the first assignment arrived). */
  assignment(): AssignmentStatus | null;
  /**
   * The writer (its scheduler and sinks): single mode's with the standby that opens it again to take over
   * (writer-role.ts), distributed mode's one for good (distributed-writer.ts).
   */
  writer: InstanceWriter;
  /**
   * The locations to run changed (Locations.reconfigure or setPaused ran): the current writer's partitions schedule the
   * locations added there and unschedule the ones removed (PartitionHandover.reconfigure); a writer opened later
   * takes the new set. Resolves with what changed here (distributed mode: on this instance's partitions only).
   */
  reconfigure(): Promise<{ added: string[]; removed: string[] }>;
  /** Registers `listener`, called whenever the partitions held here may have changed. */
  onChanged(listener: () => void): void;
}

/** What differs between the modes: how partitions make producer scopes, their sinks and their offsets. */
interface ScopePolicy {
  scopesOf(partitions: readonly number[]): number[][];
  openSink(scope: readonly number[], takenOver: () => void): Promise<PartitionSink>;
  offsetsOf(scope: readonly number[]): OffsetScope;
}

export async function takeOwnership(
  ctx: StartContext,
  kafka: KafkaStep,
  locations: Locations,
): Promise<Ownership> {
  const { config, logger, metrics, clock, lifecycle, failures } = ctx;
  const { session } = kafka;
  const { syncFor } = locations;
  const name = config.connector.name;
  // The locations to run: the configured ones not paused by a signal.
  const partitionsNow = () => locationsByPartition(name, locations.active, session.partitionCount);
  const listeners: Array<() => void> = [];
  const changed = (): void => {
    for (const listener of listeners) listener();
  };
  const onChanged = (listener: () => void): void => {
    listeners.push(listener);
  };
  const handoverFor = (policy: ScopePolicy, scheduler: Scheduler) =>
    new PartitionHandover({
      locationsByPartition: partitionsNow(),
      ports: {
        scopesOf: (partitions) => policy.scopesOf(partitions),
        openSink: (scope, takenOver) => policy.openSink(scope, takenOver),
        loadOffsets: (partitions) => session.loadOffsets(policy.offsetsOf(partitions)),
        syncFor: (uid, offset, sink) => syncFor(uid, offset, sink),
      },
      scheduler,
      metrics,
      logger,
      clock,
      revokeBoundMs: config.poll.shutdownTimeoutMs,
      retryDelayMs: config.kafka.groupSessionTimeoutMs,
      onChanged: changed,
    });
  if (config.connector.mode === 'distributed')
    return { ...(await distributedOwnership(ctx, kafka, locations, handoverFor, partitionsNow)), onChanged };

  const presence = await InstancePresence.join(session.kafka, name, config.kafka.offsetsTopic, {
    onLost: (error) => failures.membershipLost(error),
    clock,
    logger,
    startedAt: ctx.startedAt,
  });
  lifecycle.defer('instances group', () => presence.leave());
  // Bounded: a commit the scheduler abandoned at its shutdown timeout may still hang on Kafka.
  lifecycle.defer('kafka session', () => session.close(config.poll.shutdownTimeoutMs));

  /**
   * Opens a writer: a scheduler, and every partition taken over in the connector's scope (its sink initialised,
   * THEN the offsets read). At start a takeover that fails is waited for (Kafka unavailable, the group not
   * settled yet), except when a failure was reported meanwhile: a newer instance runs (the writer then holds
   * nothing, and the instance stands by: one paused during its start and woken after its replacement took over
   * must not fence it), or the membership was refused or lost; the runtime acts on it. A standby's takeover
   * (`takingOver`) is tried once and rejects holding nothing.
   */
  let held: PartitionHandover | null = null;
  const openWriter = async (takingOver: boolean): Promise<Writer> => {
    const scheduler = locations.newScheduler();
    const handover = handoverFor(connectorScope(session, presence, takingOver), scheduler);
    const opened = new Lifecycle(logger, clock);
    opened.defer('partitions', () => handover.close());
    held = handover;
    const writer = schedulerWriter(scheduler, () => opened.close());
    try {
      if (takingOver) await handover.assignFixed(session.partitions);
      else
        await waitUntilAvailable(() => handover.assignFixed(session.partitions), {
          logger,
          clock,
          // A failure reported meanwhile ends the wait: the membership refused or lost (the group could never
          // say this is the newest instance), or a newer instance runs (the sink stood down).
          signal: AbortSignal.any([failures.signal, ...(ctx.signal ? [ctx.signal] : [])]),
          what: 'the Kafka cluster',
        });
    } catch (error) {
      // At start, holding nothing, the runtime acts on the failure reported (run() stands by when a newer instance
      // runs, or ends with the error); any other failure ends the start, or the takeover.
      if (takingOver || failures.error === null) {
        await opened.close();
        throw error;
      }
    }
    return writer;
  };

  const joinsAtStart = presence.joins;
  const first = await openWriter(false);
  metrics.unownedLocations.set(0);
  const writer = new WriterRole({
    first,
    open: () => openWriter(true),
    group: presence,
    joinsAtStart,
    failures,
    metrics,
    logger,
    clock,
  });
  lifecycle.defer('writer', () => writer.close());
  return {
    assignment: () => ({ partitions: held?.partitions ?? [], generationId: null }),
    writer,
    // A standby holds no handover: the writer it opens when it takes over reads the new set.
    reconfigure: () => held?.reconfigure(partitionsNow()) ?? Promise.resolve({ added: [], removed: [] }),
    onChanged,
  };
}

/** Distributed mode: the instances group's assignments, one producer scope per partition, one writer for good. */
async function distributedOwnership(
  ctx: StartContext,
  kafka: KafkaStep,
  locations: Locations,
  handoverFor: (policy: ScopePolicy, scheduler: Scheduler) => PartitionHandover,
  partitionsNow: () => ReadonlyMap<number, readonly string[]>,
): Promise<Omit<Ownership, 'onChanged'>> {
  const { config, logger, metrics, clock, lifecycle, failures } = ctx;
  const { session, admin } = kafka;
  const name = config.connector.name;
  const scheduler = locations.newScheduler();
  const handover = handoverFor(partitionScopes(session), scheduler);
  const presence = await InstancePresence.join(session.kafka, name, config.kafka.offsetsTopic, {
    onLost: (error) => failures.membershipLost(error),
    clock,
    logger,
    startedAt: ctx.startedAt,
    assigned: {
      sessionTimeoutMs: config.kafka.groupSessionTimeoutMs,
      heartbeatIntervalMs: config.kafka.groupHeartbeatIntervalMs,
      rebalanceTimeoutMs: config.kafka.groupRebalanceTimeoutMs,
      onAssignment: (assignment) => handover.onAssignment(assignment),
      onHeartbeat: () => handover.onHeartbeat(),
    },
  });
  lifecycle.defer('instances group', () => presence.leave());
  // Bounded: a commit the scheduler abandoned at its shutdown timeout may still hang on Kafka.
  lifecycle.defer('kafka session', () => session.close(config.poll.shutdownTimeoutMs));
  const stopBackground = new AbortController();
  lifecycle.defer('partitions', async () => {
    stopBackground.abort();
    await handover.close();
  });

  void watchUnowned(presence, admin, () => locations.configured, {
    partitionOf: (uid) => locationPartition(name, uid, session.partitionCount),
    metrics,
    clock,
    intervalMs: config.kafka.groupHeartbeatIntervalMs,
    signal: stopBackground.signal,
  });
  const writer = new DistributedWriter({
    writer: schedulerWriter(scheduler, () => handover.close()),
    failures,
    metrics,
    logger,
    clock,
  });
  return {
    assignment: () => {
      const current = presence.assignment;
      return current === null
        ? null
        : { partitions: handover.partitions, generationId: current.generationId };
    },
    writer,
    reconfigure: () => handover.reconfigure(partitionsNow()),
  };
}

/** The writer of `scheduler`'s locations; `close` closes what was opened for it (its partitions' sinks). */
function schedulerWriter(scheduler: Scheduler, close: () => Promise<void>): Writer {
  return {
    run: (signal) => scheduler.run(signal),
    status: () => scheduler.status(),
    waitReasons: () => scheduler.waitReasons(),
    nudge: (locationUid) => scheduler.nudge(locationUid),
    close,
  };
}

/** Single mode: every partition in one scope, the connector's producer; its offsets are the whole topic's. */
function connectorScope(
  session: ScopedKafkaSession,
  presence: Pick<InstancePresence, 'newest'>,
  takingOver: boolean,
): ScopePolicy {
  return {
    scopesOf: (partitions) => [[...partitions]],
    openSink: () =>
      session.openConnectorSink({
        // A standby taking over initialises the id again (this instance held it before): an earlier version's
        // member counts as newer then, as at any re-initialisation (kafka/group/start-stamp.ts).
        newest: (initialisation) => presence.newest(takingOver ? TAKEOVER_INITIALISATION : initialisation),
      }),
    offsetsOf: () => 'connector',
  };
}

/** Distributed mode: one scope per partition, its own producer (`…-p<P>`) and its own offsets. */
function partitionScopes(session: ScopedKafkaSession): ScopePolicy {
  return {
    scopesOf: (partitions) => partitions.map((partition) => [partition]),
    openSink: ([partition], takenOver) => {
      if (partition === undefined) return Promise.reject(new RangeError('an empty producer scope'));
      return session.openPartitionSink(partition, takenOver);
    },
    offsetsOf: (partitions) => partitions,
  };
}

/**
 * Keeps calls_connector_unowned_locations: every `intervalMs`, the configured locations whose partition no
 * member of the group owns (kept as it was while the group rebalances, or when the group cannot be described).
 */
async function watchUnowned(
  presence: InstancePresence,
  admin: Pick<KafkaAdmin, 'describeGroups'>,
  configured: () => readonly string[],
  options: {
    partitionOf: (uid: string) => number;
    metrics: UnownedGaugeMetrics;
    clock: Clock;
    intervalMs: number;
    signal: AbortSignal;
  },
): Promise<void> {
  options.metrics.unownedLocations.set(configured().length);
  while (!options.signal.aborted) {
    try {
      const owned = await presence.ownedByGroup(admin);
      const partitions = configured().map(options.partitionOf);
      if (owned !== null)
        options.metrics.unownedLocations.set(partitions.filter((p) => !owned.has(p)).length);
    } catch {
      // Kafka unavailable: the gauge keeps its last value; the kafka readiness check says why.
    }
    await options.clock.sleep(options.intervalMs, options.signal).catch(() => undefined);
  }
}
