/**
 * The pure rules of partition ownership in `connector.mode: distributed`: what changed between two
 * assignments, and the sticky assignment the group leader computes.
 *
 * Why sticky: kafkajs supports only the eager rebalance protocol (every member rejoins and receives a whole
 * new assignment). A partition that changes owner costs a producer initialisation and a read of that
 * partition, and its locations pause meanwhile; so the leader keeps each partition with the member that
 * reports owning it, and moves only what balance requires (a joining member takes about its share, a leaving
 * member's partitions are spread). Stickiness is only an optimisation: safety does not depend on it (nor on
 * any member's claim being true), it comes from the per-partition transactional ids (see kafka/group/instance-presence.ts).
 */

export interface AssignmentDiff {
  /** Partitions in `next` and not in `previous`: to take over (fence, read, poll). */
  assigned: number[];
  /** Partitions in `previous` and not in `next`: to let go (stop, finish or abort, close). */
  revoked: number[];
  /** In both: nothing to do. */
  kept: number[];
}

export function diffAssignment(previous: readonly number[], next: readonly number[]): AssignmentDiff {
  const before = new Set(previous);
  const after = new Set(next);
  const sorted = (values: Iterable<number>) => [...values].sort((a, b) => a - b);
  return {
    assigned: sorted([...after].filter((p) => !before.has(p))),
    revoked: sorted([...before].filter((p) => !after.has(p))),
    kept: sorted([...after].filter((p) => before.has(p))),
  };
}

export interface MemberClaim {
  memberId: string;
  /** The partitions the member reports owning (its last assignment); may be stale or wrong. */
  owned: readonly number[];
}

/**
 * Assigns every partition to exactly one member, balanced (sizes differ by at most one), keeping as many
 * claimed partitions with their claimant as balance allows. A partition claimed by two members (one of
 * them missed a rebalance) or not in `partitions` counts as unclaimed. Deterministic: the same input gives
 * the same output whatever the order of `members`. Members with nothing assigned are in the map too.
 */
export function stickyAssign(
  members: readonly MemberClaim[],
  partitions: readonly number[],
): Map<string, number[]> {
  const result = new Map<string, number[]>();
  if (members.length === 0) return result;
  const all = [...new Set(partitions)].sort((a, b) => a - b);
  const exists = new Set(all);
  const claimants = new Map<number, number>();
  for (const member of members)
    for (const p of new Set(member.owned)) claimants.set(p, (claimants.get(p) ?? 0) + 1);
  const claimsOf = (member: MemberClaim) =>
    [...new Set(member.owned)].filter((p) => exists.has(p) && claimants.get(p) === 1).sort((a, b) => a - b);

  // The members that keep most get the extra slots, so that fewer partitions move.
  const ordered = [...members]
    .map((member) => ({ memberId: member.memberId, claims: claimsOf(member) }))
    .sort(
      (a, b) =>
        b.claims.length - a.claims.length || (a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0),
    );
  const base = Math.floor(all.length / ordered.length);
  const extra = all.length % ordered.length;
  const taken = new Set<number>();
  const capacity = new Map<string, number>();
  ordered.forEach(({ memberId, claims }, index) => {
    const quota = base + (index < extra ? 1 : 0);
    const kept = claims.slice(0, quota);
    for (const p of kept) taken.add(p);
    result.set(memberId, kept);
    capacity.set(memberId, quota - kept.length);
  });
  const free = all.filter((p) => !taken.has(p));
  for (const { memberId } of ordered) {
    const room = capacity.get(memberId) ?? 0;
    const assigned = result.get(memberId) ?? [];
    assigned.push(...free.splice(0, room));
    assigned.sort((a, b) => a - b);
  }
  return result;
}
