/**
 * This instance's membership of the consumer group `<connector.name>-instances`: Kafka's own word on which
 * instances of a connector run and, in distributed mode, which partitions of the offsets topic each owns. One
 * class for the one group (a consumer subscribed to the offsets topic, paused at every join in either mode: it
 * fetches nothing and commits nothing, so an idle connector pays a heartbeat every few seconds, not a fetch
 * request twice a second); no coordinator, lock, lease or table of our own.
 *
 * Why every instance is a member:
 * - `offsets reset` describes the group and refuses while it has members, as KIP-875 requires a stopped
 *   connector before its offsets are altered (`runningInstances()`). A stopped instance leaves the group at once
 *   (consumer disconnect); a crashed one after the group session timeout.
 * - Single mode, who may initialise the transactional id: the newest running instance, by the start stamps in
 *   the members' metadata (group/start-stamp.ts). Every initialisation of the producer, the first one included,
 *   asks `newest()` first (kafka/sinks/init-rule.ts), which waits until the group is stable with this
 *   instance in it: an older instance that was paused or cut off, at start or while writing, sees the newer one
 *   and stands by instead of fencing it back. Single mode owns every partition whatever the group assigns (its
 *   assignment is fixed, see runtime/steps/ownership.ts), so it joins with kafkajs's round-robin protocol (its
 *   name, so earlier versions share the group) and a short session timeout (`PRESENCE_SESSION_TIMEOUT_MS`: what
 *   a restart after kill -9 waits).
 * - Distributed mode (`assigned` option), who owns what: the partitions the group assigns this member are the
 *   ones it owns (the locations whose offset keys hash there, group/location-partition.ts), reported to
 *   `onAssignment` after every completed join; the sticky assignor (group/sticky-assigner.ts) keeps them where
 *   they are unless balance moves them. Fetching is paused at once (a paused kafkajs consumer still heartbeats,
 *   every `maxWaitTimeInMs` at most); the owner reads a partition it took over with a read_committed reader of
 *   its own.
 *
 * Rebalance protocol (distributed): kafkajs supports only eager rebalancing: on a rebalance every member rejoins
 * and then receives a whole new assignment (GROUP_JOIN carries it); kafkajs has no revocation callback that runs
 * before the rejoin, so an instance may still be committing a page of a partition that the group already gave to
 * another. That is safe because ownership is enforced by Kafka transactions, not by this module: each partition
 * has its own transactional id (sinks/transactional-id.ts, `partitionTransactionalId`), and the new owner initialises it
 * BEFORE reading the partition. initTransactions fences the previous owner's producer (its later sends and its
 * commit fail) and completes or aborts its open transaction, so the new owner reads every committed offset and
 * nothing the old owner writes afterwards can become visible. A paused instance ("zombie") that wakes after its
 * session timeout is in the same position: its first commit fails fenced.
 *
 * Modes do not mix: the distributed protocol has its own name, so the broker refuses a group that mixes the two
 * (INCONSISTENT_GROUP_PROTOCOL); a single-mode instance would otherwise write distributed instances' locations
 * under another transactional id, unfenced. A single-mode member checks before it joins, and `onLost` is called
 * (the runtime stops with KAFKA_GROUP_MEMBERSHIP_LOST), as for any crash of the group consumer that kafkajs does
 * not restart from (a group it may not join, a bug).
 *
 * Contract: `join()` once at start (single mode: it does not wait for the group to form; distributed: it
 * resolves once the first join ended), then single mode `newest()` before each initialisation of the producer,
 * and while it stands by `rejoined()` to wait for the group's next rebalance (runtime/writer-role.ts); distributed `onAssignment` is called after every completed join with the whole new assignment, in order and
 * never concurrently with itself; `fresh` says this instance joined as a new member (first join, or expelled
 * after its session timeout): nothing it held before is still its own. `onHeartbeat` after each successful
 * heartbeat. `leave()` at shutdown, after the work stopped.
 */
import type { Admin, Consumer, ConsumerConfig, Kafka } from 'kafkajs';
import type { Logger } from '../../logging/logger.js';
import { systemClock, type Clock } from '../../time/clock.js';
import { presenceGroupId, runByDistributedInstances } from './group-members.js';
import { JoinCounter } from './join-counter.js';
import { assignedPartitions, STICKY_ASSIGNER, stickyAssigner } from './sticky-assigner.js';
import { isNewest, stampedRoundRobin, startStampOf, type Initialisation } from './start-stamp.js';

export { STICKY_ASSIGNER };
export { presenceGroupId, runningInstances, type RunningInstance } from './group-members.js';

/**
 * Single mode's group session timeout: short (the broker's minimum by default), since a single-mode start waits
 * for a killed or paused predecessor's member to expire before it initialises its producer (see `newest`), so
 * this is what a restart after kill -9 costs.
 */
export const PRESENCE_SESSION_TIMEOUT_MS = 6_000;

/**
 * Single mode: how long the presence consumer's fetch loop waits between heartbeats (ms; it fetches nothing, see
 * `listen`), so that leaving takes at most about this long.
 */
export const PRESENCE_MAX_WAIT_MS = 500;

/** The partitions of the offsets topic this instance owns, as one completed join of the group gave them. */
export interface Assignment {
  partitions: number[];
  /** The group generation, as the first heartbeat after the join confirms it; null until then. */
  generationId: number | null;
  /** This instance joined as a new member: whatever it held before is no longer its own. */
  fresh: boolean;
  /** When the rebalance began, as this instance saw it (epoch ms): a REBALANCING event or the join's start. */
  rebalanceStartedAt: number;
}

/** Distributed mode: the group assigns the partitions (sticky assignor), with these settings. */
export interface AssignedMembership {
  sessionTimeoutMs: number;
  heartbeatIntervalMs: number;
  rebalanceTimeoutMs: number;
  onAssignment: (assignment: Assignment) => void;
  onHeartbeat?: (generationId: number) => void;
}

export interface PresenceOptions {
  /**
   * The membership was refused (modes mixed) or ended for good (kafkajs gave up): the caller drops everything
   * and fails.
   */
  onLost?: (error: Error) => void;
  clock?: Clock;
  logger?: Logger;
  /** Single mode: when this instance's start began (epoch ms), its start stamp; default: when it joins. */
  startedAt?: number;
  /** Distributed mode; without it the instance is only present (single mode). */
  assigned?: AssignedMembership;
}

/** How often `newest()` describes the group while it rebalances. */
const DESCRIBE_INTERVAL_MS = 500;

/** kafkajs's refusal of pause() while its consumer has no group (between a crash and its restart). */
const NOT_RUNNING = 'Consumer group was not initialized';

export class InstancePresence {
  private leaving = false;
  /** Why the membership ended for good (`lost`); undefined while it holds. */
  private ended: Error | undefined;
  private memberId: string | null = null;
  private current: Assignment | null = null;
  private rebalancingSince: number | null = null;
  /** Completed joins of this instance's member (one per rebalance it took part in), and who waits for the next. */
  private readonly joinCounter = new JoinCounter();
  private readonly consumer: Consumer;
  private readonly clock: Clock;
  private readonly startedAt: number;

  private constructor(
    private readonly kafka: Kafka,
    private readonly connectorName: string,
    private readonly offsetsTopic: string,
    private readonly options: PresenceOptions,
  ) {
    this.clock = options.clock ?? systemClock;
    this.startedAt = options.startedAt ?? this.clock.now();
    this.consumer = kafka.consumer(this.consumerConfig());
    this.listen();
  }

  /** Joins the connector's instances group, subscribed to `offsetsTopic` (the connector's own, always there). */
  static async join(
    kafka: Kafka,
    connectorName: string,
    offsetsTopic: string,
    options: PresenceOptions = {},
  ): Promise<InstancePresence> {
    const presence = new InstancePresence(kafka, connectorName, offsetsTopic, options);
    await (options.assigned === undefined ? presence.start() : presence.startAssigned());
    return presence;
  }

  /**
   * Whether this instance is the newest one of the connector running, as the group says once it is stable with
   * this instance's current member in it: true when every other member started before it, false when one started
   * later (group/start-stamp.ts, which also says how members of earlier versions count at each `initialisation`). Waiting for this instance's member also waits for a killed or paused
   * predecessor's member to expire (a join waits for it, up to PRESENCE_SESSION_TIMEOUT_MS), and for this
   * instance's own rejoin after a pause. Rejects when the group has not settled within `timeoutMs`, cannot be
   * described, or the membership ended for good (`onLost`).
   */
  async newest(
    initialisation: Initialisation,
    timeoutMs = 2 * PRESENCE_SESSION_TIMEOUT_MS + 10_000,
  ): Promise<boolean> {
    const deadline = this.clock.now() + timeoutMs;
    const admin = this.kafka.admin();
    await admin.connect();
    try {
      for (;;) {
        if (this.ended !== undefined)
          throw new Error(
            `this instance is no longer a member of the group ${presenceGroupId(this.connectorName)}: ${this.ended.message}`,
            { cause: this.ended },
          );
        const { groups } = await admin.describeGroups([presenceGroupId(this.connectorName)]);
        const group = groups[0];
        const me = this.memberId;
        if (group !== undefined && group.state === 'Stable' && me !== null) {
          const members = group.members.map((m) => ({
            memberId: m.memberId,
            startedAt: startStampOf(m.memberMetadata),
          }));
          if (members.some((m) => m.memberId === me)) return isNewest(me, members, initialisation);
        }
        if (this.clock.now() >= deadline)
          throw new Error(
            `the group ${presenceGroupId(this.connectorName)} did not settle with this instance in it within ${timeoutMs} ms (state ${group?.state ?? 'unknown'}, ${group?.members.length ?? 0} members)`,
          );
        await this.clock.sleep(DESCRIBE_INTERVAL_MS);
      }
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  }

  /**
   * How many joins of the group this instance's member completed so far: each is the end of a rebalance, so a
   * change of the group's membership (an instance joined, left, or expired) moves it. A standby (single mode)
   * asks `newest()` again once it moved (runtime/writer-role.ts).
   */
  get joins(): number {
    return this.joinCounter.joins;
  }

  /** Resolves once `joins` exceeds `seen` (at once if it already does); rejects when `signal` aborts. */
  rejoined(seen: number, signal: AbortSignal): Promise<void> {
    return this.joinCounter.rejoined(seen, signal);
  }

  /** Distributed mode: the latest assignment; null until the first join completed. */
  get assignment(): Assignment | null {
    return this.current;
  }

  /**
   * The partitions of the offsets topic some live member owns, as the group coordinator describes the group;
   * null while the group rebalances (eager: then nobody is sure of anything). For the unowned-locations gauge.
   */
  async ownedByGroup(admin: Pick<Admin, 'describeGroups'>): Promise<Set<number> | null> {
    const { groups } = await admin.describeGroups([presenceGroupId(this.connectorName)]);
    const group = groups[0];
    if (group === undefined || group.state !== 'Stable') return null;
    const owned = new Set<number>();
    for (const member of group.members)
      for (const p of assignedPartitions(member.memberAssignment, this.offsetsTopic)) owned.add(p);
    return owned;
  }

  async leave(): Promise<void> {
    this.leaving = true;
    await this.consumer.disconnect();
  }

  private consumerConfig(): ConsumerConfig {
    const groupId = presenceGroupId(this.connectorName);
    const assigned = this.options.assigned;
    if (assigned === undefined)
      return {
        groupId,
        sessionTimeout: PRESENCE_SESSION_TIMEOUT_MS,
        heartbeatInterval: 2_000,
        // Paused (see `listen`): the fetch loop only sleeps this long between heartbeats, and a leave
        // (disconnect) waits for that sleep: kafkajs's default (5 s) held every single-mode stop for 5 s.
        maxWaitTimeInMs: PRESENCE_MAX_WAIT_MS,
        readUncommitted: false,
        partitionAssigners: [stampedRoundRobin(this.startedAt)],
        // A join cut short by leave() crashes the consumer; kafkajs would then restart it and join again.
        retry: { restartOnFailure: () => Promise.resolve(!this.leaving) },
      };
    return {
      groupId,
      sessionTimeout: assigned.sessionTimeoutMs,
      heartbeatInterval: assigned.heartbeatIntervalMs,
      rebalanceTimeout: assigned.rebalanceTimeoutMs,
      // Paused: the fetch loop only sleeps this long between heartbeats.
      maxWaitTimeInMs: Math.max(100, Math.min(500, Math.floor(assigned.heartbeatIntervalMs / 3))),
      readUncommitted: false,
      allowAutoTopicCreation: false,
      partitionAssigners: [stickyAssigner(() => this.current?.partitions ?? [])],
    };
  }

  /** Single mode: present only; the join is not awaited (see `newest`). */
  private async start(): Promise<void> {
    const { consumer } = this;
    // The join below is not awaited, and the broker's refusal of a mixed group comes with it: a group already run
    // by distributed instances is refused here, before this instance writes any page.
    if (await runByDistributedInstances(this.kafka, this.connectorName))
      this.lost(
        new Error(
          `the group ${presenceGroupId(this.connectorName)} is run by distributed-mode instances (protocol ${STICKY_ASSIGNER})`,
        ),
      );
    await consumer.connect();
    await consumer.subscribe({ topic: this.offsetsTopic, fromBeginning: false });
    // Not awaited here: kafkajs's run() resolves only once the group is joined, and a join waits for the member of
    // a killed predecessor to expire (up to PRESENCE_SESSION_TIMEOUT_MS). A single-mode start waits for it through
    // `newest` (bounded) before its producer fences anyone. A failure to start is reported like a refusal.
    consumer.run({ autoCommit: false, eachMessage: async () => {} }).catch((error: unknown) => {
      if (!this.leaving) this.lost(error instanceof Error ? error : new Error(String(error)));
    });
  }

  /** Distributed mode: resolves once the first join ended; the consumer never fetches. */
  private async startAssigned(): Promise<void> {
    const { consumer } = this;
    await consumer.connect();
    await consumer.subscribe({ topic: this.offsetsTopic, fromBeginning: false });
    // run() resolves once the first join ended. When that join failed with a retriable error (the group
    // rebalancing as other instances start, the coordinator loading), kafkajs has already disconnected the
    // group and set a timer to start again, and it refuses a pause until then: the GROUP_JOIN handler pauses
    // the consumer once it has joined, before any fetch. (Pausing here then threw, and the instance failed
    // to start: CI saw it once with two instances starting together.)
    await consumer.run({ autoCommit: false, eachBatch: async () => {} });
    pauseIfRunning(consumer, this.offsetsTopic);
  }

  private listen(): void {
    const { consumer, clock, offsetsTopic } = this;
    const { events } = consumer;
    const assigned = this.options.assigned;
    consumer.on(events.GROUP_JOIN, ({ payload }) => {
      const fresh = this.memberId !== payload.memberId;
      this.memberId = payload.memberId;
      this.joinCounter.joined();
      // Either mode reads nothing of the offsets topic: paused at every join (kafkajs emits this before its fetch
      // loop starts, and a consumer it restarted after a crash comes unpaused), the fetch loop only sleeps
      // maxWaitTimeInMs between heartbeats instead of a fetch request per broker every maxWaitTimeInMs.
      consumer.pause([{ topic: offsetsTopic }]);
      if (assigned === undefined) return;
      const now = clock.now();
      const partitions = [...(payload.memberAssignment[offsetsTopic] ?? [])].sort((a, b) => a - b);
      const joinStartedAt = now - payload.duration;
      const rebalanceStartedAt = Math.min(this.rebalancingSince ?? joinStartedAt, joinStartedAt);
      this.rebalancingSince = null;
      this.current = { partitions, generationId: null, fresh, rebalanceStartedAt };
      assigned.onAssignment(this.current);
    });
    consumer.on(events.CRASH, ({ payload }) => {
      if (payload.restart || this.leaving) return; // kafkajs rejoins by itself
      // kafkajs does not restart after this crash: the membership is over for good. Single mode could no longer
      // tell whether it is the newest instance, distributed mode what it owns: both stop (onLost). A refused mix
      // of modes (INCONSISTENT_GROUP_PROTOCOL) ends here too.
      this.options.logger?.error(
        { err: payload.error, type: originalErrorType(payload.error) },
        'left the instances group for good (the group consumer crashed)',
      );
      this.lost(payload.error);
    });
    if (assigned === undefined) return;
    consumer.on(events.REBALANCING, () => {
      this.rebalancingSince ??= clock.now();
    });
    consumer.on(events.HEARTBEAT, ({ payload }) => {
      if (this.current !== null) this.current.generationId = payload.groupGenerationId;
      assigned.onHeartbeat?.(payload.groupGenerationId);
    });
  }

  private lost(error: Error): void {
    this.ended ??= error;
    this.options.onLost?.(error);
  }
}

/**
 * Pauses fetching of `topic`, unless kafkajs is between a crash and its restart (see startAssigned). Also the
 * configurations group's member's (configuration-peers.ts).
 */
export function pauseIfRunning(consumer: Pick<Consumer, 'pause'>, topic: string): void {
  try {
    consumer.pause([{ topic }]);
  } catch (error) {
    if (!(error instanceof Error && error.message.startsWith(NOT_RUNNING))) throw error;
  }
}

/** The kafkajs protocol error type at the root of a (wrapped) kafkajs error, if any. */
function originalErrorType(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 10 && current instanceof Error; depth++) {
    const type = (current as Error & { type?: unknown }).type;
    if (typeof type === 'string') return type;
    current = current.cause;
  }
  return undefined;
}
