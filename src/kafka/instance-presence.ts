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
 * Contract: `InstancePresence.join()` once at start (it does not wait for the group to form: a slow join delays
 * nothing), `leave()` at shutdown; `runningInstances()` is for the CLI.
 */
import type { Consumer, Kafka } from 'kafkajs';

export const PRESENCE_SESSION_TIMEOUT_MS = 15_000;

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

export class InstancePresence {
  private constructor(
    private readonly consumer: Consumer,
    private readonly state: { leaving: boolean },
  ) {}

  /** Joins the connector's presence group, subscribed to `offsetsTopic` (the connector's own, always there). */
  static async join(
    kafka: Kafka,
    connectorName: string,
    offsetsTopic: string,
    onRefused: (error: Error) => void = () => {},
  ): Promise<InstancePresence> {
    const state = { leaving: false };
    const consumer = kafka.consumer({
      groupId: presenceGroupId(connectorName),
      sessionTimeout: PRESENCE_SESSION_TIMEOUT_MS,
      heartbeatInterval: 3_000,
      readUncommitted: false,
      // A join cut short by leave() crashes the consumer; kafkajs would then restart it and join again.
      retry: { restartOnFailure: () => Promise.resolve(!state.leaving) },
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
    // Not awaited: kafkajs's run() resolves only once the group is joined, and a join waits for the member of
    // a killed predecessor to expire (up to PRESENCE_SESSION_TIMEOUT_MS). A restart after kill -9 must not wait
    // for that (it did: about 12 s before the first poll). A failure to start is reported like a refusal.
    consumer.run({ autoCommit: false, eachMessage: async () => {} }).catch((error: unknown) => {
      if (!state.leaving) onRefused(error instanceof Error ? error : new Error(String(error)));
    });
    return new InstancePresence(consumer, state);
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
