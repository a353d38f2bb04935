/**
 * Which instances of a connector are running, told by Kafka itself: each running instance is a member of the
 * consumer group `<connector.name>-instances` (a consumer of the offsets topic that reads nothing of use and
 * commits nothing). `offsets reset` describes that group and refuses while it has members, as KIP-875 requires
 * a stopped connector before its offsets are altered; no lock file, lease or table of our own.
 *
 * A stopped instance leaves the group at once (consumer disconnect); a crashed one after the group session
 * timeout (`PRESENCE_SESSION_TIMEOUT_MS`).
 *
 * Modes do not mix: in `connector.mode: distributed` the same group assigns the work, with its own assignor
 * protocol (group/partition-ownership.ts). A single-mode instance joining a group of distributed instances is
 * refused by the broker (INCONSISTENT_GROUP_PROTOCOL); it would otherwise write their locations under another
 * transactional id, unfenced. `onRefused` is then called (the runtime stops with KAFKA_GROUP_MEMBERSHIP_LOST).
 *
 * Who may initialise the transactional id (single mode): an instance joins this group before its producer's first
 * initialisation (`joined()`, bounded), so an older instance that was paused or cut off, and would rebuild its
 * producer, sees the newer one in the group (`alone()` false) and stands by instead of fencing it back
 * (kafka/sinks/transactional-sink.ts). Kafka's own membership decides; no lease or lock of ours.
 *
 * Contract: `InstancePresence.join()` once at start (it does not wait for the group to form), then `joined()` before
 * the producer is initialised, `leave()` at shutdown; `runningInstances()` is for the CLI.
 */
import type { Consumer, Kafka } from 'kafkajs';
import { systemClock, TIMED_OUT, withTimeout, type Clock } from '../time/clock.js';

/**
 * Short (the broker's minimum by default): a single-mode start waits for a killed or paused predecessor's member to
 * expire before it initialises its producer (see `joined`), so this is what a restart after kill -9 costs.
 */
export const PRESENCE_SESSION_TIMEOUT_MS = 6_000;

/**
 * The distributed mode's assignor protocol (group/partition-ownership.ts): instances of one connector must all
 * run distributed mode, the broker refuses a group that mixes it with the presence group's default protocol.
 */
export const STICKY_ASSIGNER = 'CallsConnectorSticky';

export function presenceGroupId(connectorName: string): string {
  return `${connectorName}-instances`;
}

export interface RunningInstance {
  memberId: string;
  clientId: string;
  clientHost: string;
}

/** How often `alone()` describes the group while it rebalances. */
const DESCRIBE_INTERVAL_MS = 500;

/** The membership the consumer last joined with (kafkajs's GROUP_JOIN event), and its waiters. */
interface PresenceState {
  leaving: boolean;
  memberId: string | null;
  onJoin: Array<() => void>;
}

export class InstancePresence {
  private constructor(
    private readonly kafka: Kafka,
    private readonly connectorName: string,
    private readonly consumer: Consumer,
    private readonly state: PresenceState,
    private readonly clock: Clock,
  ) {}

  /**
   * Resolves true once this instance is a member of the group (its first join completed), false after
   * `timeoutMs` without. A join waits for a predecessor's member that was killed or paused to expire (up to
   * PRESENCE_SESSION_TIMEOUT_MS), which is what makes this instance visible to it before it fences it.
   */
  async joined(timeoutMs: number): Promise<boolean> {
    if (this.state.memberId !== null) return true;
    const join = new Promise<void>((resolve) => this.state.onJoin.push(resolve));
    return (await withTimeout(this.clock, join, timeoutMs)) !== TIMED_OUT;
  }

  /**
   * Whether no other instance of the connector runs, as the group says once it is stable with this instance's
   * current member in it: true when that member is the only one, false when there is another. Rejects when the
   * group has not settled within `timeoutMs` (this instance's own rejoin after a pause takes up to a session
   * timeout), or cannot be described.
   */
  async alone(timeoutMs = 2 * PRESENCE_SESSION_TIMEOUT_MS + 10_000): Promise<boolean> {
    const deadline = this.clock.now() + timeoutMs;
    const admin = this.kafka.admin();
    await admin.connect();
    try {
      for (;;) {
        const { groups } = await admin.describeGroups([presenceGroupId(this.connectorName)]);
        const group = groups[0];
        const me = this.state.memberId;
        if (group !== undefined && group.state === 'Stable' && me !== null) {
          if (group.members.some((m) => m.memberId !== me)) return false;
          if (group.members.some((m) => m.memberId === me)) return true;
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

  /** Joins the connector's presence group, subscribed to `offsetsTopic` (the connector's own, always there). */
  static async join(
    kafka: Kafka,
    connectorName: string,
    offsetsTopic: string,
    onRefused: (error: Error) => void = () => {},
    clock: Clock = systemClock,
  ): Promise<InstancePresence> {
    const state: PresenceState = { leaving: false, memberId: null, onJoin: [] };
    const consumer = kafka.consumer({
      groupId: presenceGroupId(connectorName),
      sessionTimeout: PRESENCE_SESSION_TIMEOUT_MS,
      heartbeatInterval: 2_000,
      readUncommitted: false,
      // A join cut short by leave() crashes the consumer; kafkajs would then restart it and join again.
      retry: { restartOnFailure: () => Promise.resolve(!state.leaving) },
    });
    consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
      state.memberId = payload.memberId;
      for (const waiter of state.onJoin.splice(0)) waiter();
    });
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      if (!payload.restart && originalErrorType(payload.error) === 'INCONSISTENT_GROUP_PROTOCOL')
        onRefused(payload.error);
    });
    // The join below is not awaited, and the broker's refusal of a mixed group comes with it: a group already run
    // by distributed instances is refused here, before this instance writes any page.
    if (await runByDistributedInstances(kafka, connectorName))
      onRefused(
        new Error(
          `the group ${presenceGroupId(connectorName)} is run by distributed-mode instances (protocol ${STICKY_ASSIGNER})`,
        ),
      );
    await consumer.connect();
    await consumer.subscribe({ topic: offsetsTopic, fromBeginning: false });
    // Not awaited here: kafkajs's run() resolves only once the group is joined, and a join waits for the member of
    // a killed predecessor to expire (up to PRESENCE_SESSION_TIMEOUT_MS). A single-mode start waits for it through
    // `joined` (bounded) before its producer fences anyone. A failure to start is reported like a refusal.
    consumer.run({ autoCommit: false, eachMessage: async () => {} }).catch((error: unknown) => {
      if (!state.leaving) onRefused(error instanceof Error ? error : new Error(String(error)));
    });
    return new InstancePresence(kafka, connectorName, consumer, state, clock);
  }

  async leave(): Promise<void> {
    this.state.leaving = true;
    await this.consumer.disconnect();
  }
}

/**
 * Whether the connector's group has members in distributed mode (its protocol is the sticky assignor's). A check
 * that cannot be made (the coordinator loading, a broker restarting) answers false rather than fail the start:
 * the broker's refusal of the join still stops a mix of modes, a moment later.
 */
async function runByDistributedInstances(kafka: Kafka, connectorName: string): Promise<boolean> {
  const admin = kafka.admin();
  try {
    await admin.connect();
    const { groups } = await admin.describeGroups([presenceGroupId(connectorName)]);
    const group = groups[0];
    return group !== undefined && group.members.length > 0 && group.protocol === STICKY_ASSIGNER;
  } catch {
    return false;
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/** Members of the connector's presence group: empty when no instance runs (or the group never existed). */
export async function runningInstances(kafka: Kafka, connectorName: string): Promise<RunningInstance[]> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const { groups } = await admin.describeGroups([presenceGroupId(connectorName)]);
    return (groups[0]?.members ?? []).map((m) => ({
      memberId: m.memberId,
      clientId: m.clientId,
      clientHost: m.clientHost,
    }));
  } finally {
    await admin.disconnect();
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
