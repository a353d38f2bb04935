/**
 * Single mode's word on which running instance of a connector is the newest, the one that may initialise the
 * connector's transactional id: each instance puts the time its start began (its start stamp) in its member
 * metadata of `<name>-instances`, and every instance reads the same metadata from the group coordinator, so
 * they all agree on the newest one. The newest instance writes; an older one stands by (it was paused, cut off,
 * or is being replaced by a rolling restart) and never fences the newest back.
 *
 * Why the start stamp and not the order of joins: an instance paused during its start (before its producer's
 * first initialisation) joins the group again when it wakes, after its replacement, and would pass for the
 * newer one. Its stamp still says when it started. A process restarted by a supervisor starts anew, with a new
 * stamp: it is the newest then, as it would be by any other rule (it reads the stored offsets afresh).
 *
 * Clocks: stamps are compared across hosts, so clock skew only matters between instances started within the
 * skew of each other; one of them still wins, since equal stamps are ordered by member id.
 *
 * Members without a stamp run an earlier version of the connector (kafkajs's plain round-robin metadata), whose
 * rule was: initialise at start unconditionally, and again only when alone in the group. Against them this
 * instance keeps that rule, so upgrades and rollbacks both hand over: at its first initialisation an unstamped
 * member counts as older (a rolling upgrade's new instance takes over, as an earlier version's would), at a
 * re-initialisation as newer (a rollback's earlier-version instance, which started after this one, keeps the id).
 *
 * Single mode keeps kafkajs's protocol name (`RoundRobinAssigner`) and its assignment, so instances of earlier
 * versions and of this one share the group during a rolling restart; only the metadata's user data is ours.
 */
import kafkajs, { type PartitionAssigner } from 'kafkajs';

// kafkajs is CommonJS and Node's ESM loader cannot see these exports by name (only vitest's transform can).
const { AssignerProtocol, PartitionAssigners } = kafkajs;

/** A member of the instances group as DescribeGroups shows it, with its start stamp (null: none readable). */
export interface StampedMember {
  memberId: string;
  startedAt: number | null;
}

interface StampUserData {
  startedAt: number;
}

/** kafkajs's round-robin assignor, whose member metadata carries `startedAt` (epoch ms). */
export function stampedRoundRobin(startedAt: number): PartitionAssigner {
  return (config) => {
    const roundRobin = PartitionAssigners.roundRobin(config);
    return {
      name: roundRobin.name,
      version: roundRobin.version,
      assign: (group) => roundRobin.assign(group),
      protocol: ({ topics }) => ({
        name: roundRobin.name,
        metadata: AssignerProtocol.MemberMetadata.encode({
          version: roundRobin.version,
          topics,
          userData: Buffer.from(JSON.stringify({ startedAt } satisfies StampUserData)),
        }),
      }),
    };
  };
}

/** The start stamp in a member's metadata (DescribeGroups' memberMetadata); null when it carries none. */
export function startStampOf(memberMetadata: Buffer | null | undefined): number | null {
  if (memberMetadata === null || memberMetadata === undefined || memberMetadata.length === 0) return null;
  try {
    const userData = AssignerProtocol.MemberMetadata.decode(memberMetadata)?.userData;
    if (userData === undefined || userData === null || userData.length === 0) return null;
    const parsed = JSON.parse(userData.toString('utf8')) as Partial<StampUserData>;
    return typeof parsed.startedAt === 'number' && Number.isFinite(parsed.startedAt)
      ? parsed.startedAt
      : null;
  } catch {
    return null; // unreadable metadata (another client's, a truncated buffer): no stamp, so older than any
  }
}

/** Which initialisation of the producer is asked about: the first one at start, or one after it. */
export type Initialisation = 'first' | 'again';

/**
 * Whether `memberId` may initialise the transactional id, being the newest of `members`: every other member
 * started before it, equal stamps ordered by member id. A member without a stamp (an earlier version) counts as
 * older at the `first` initialisation and as newer `again` (see the module comment). False when `memberId` is
 * not among them, or has no stamp itself.
 */
export function isNewest(
  memberId: string,
  members: readonly StampedMember[],
  initialisation: Initialisation,
): boolean {
  const me = members.find((m) => m.memberId === memberId);
  if (me?.startedAt === null || me === undefined) return false;
  const mine = me.startedAt;
  return members.every((other) => {
    if (other.memberId === memberId) return true;
    if (other.startedAt === null) return initialisation === 'first';
    return other.startedAt !== mine ? other.startedAt < mine : other.memberId < memberId;
  });
}
