/**
 * The connector's instances group (`<connector.name>-instances`, group/instance-presence.ts) as the group
 * coordinator describes it, for those that are not its members: who runs (`offsets reset` refuses while anyone
 * does), and whether distributed-mode instances run it (a single-mode instance must not join then).
 */
import type { Kafka } from 'kafkajs';
import { STICKY_ASSIGNER } from './sticky-assigner.js';

export function presenceGroupId(connectorName: string): string {
  return `${connectorName}-instances`;
}

export interface RunningInstance {
  memberId: string;
  clientId: string;
  clientHost: string;
}

/**
 * Whether the connector's group has members in distributed mode (its protocol is the sticky assigner's). A check
 * that cannot be made (the coordinator loading, a broker restarting) answers false rather than fail the start:
 * the broker's refusal of the join still stops a mix of modes, a moment later.
 */
export async function runByDistributedInstances(kafka: Kafka, connectorName: string): Promise<boolean> {
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

/** Members of the connector's instances group: empty when no instance runs (or the group never existed). */
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
