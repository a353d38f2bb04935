/**
 * What a change of the locations to run (a reload, a pause or resume) asks of the partitions held here: pure,
 * applied by PartitionHandover.reconfigure. Of each held partition, the locations it held and no longer lists
 * are removed; those it lists and did not hold are added to its sink, or, when it held no location and so has
 * no sink yet, the partition is taken over like an assigned one. A location listed before and after is left out.
 */
export interface HeldLocations {
  /** false: the partition held no location, so no producer was opened for it. */
  hasSink: boolean;
  uids: readonly string[];
}

export interface HeldLocationsChange {
  removed: string[];
  /** Locations to schedule on a partition that has its sink, by partition. */
  adding: Map<number, string[]>;
  /** Partitions without a sink that now hold locations: taken over. */
  takeOver: number[];
}

export function heldLocationsChange(
  held: ReadonlyMap<number, HeldLocations>,
  listedByPartition: ReadonlyMap<number, readonly string[]>,
): HeldLocationsChange {
  const change: HeldLocationsChange = { removed: [], adding: new Map(), takeOver: [] };
  for (const [partition, { hasSink, uids }] of held) {
    const listed = listedByPartition.get(partition) ?? [];
    const before = new Set(uids);
    const kept = new Set(listed);
    change.removed.push(...uids.filter((uid) => !kept.has(uid)));
    const added = listed.filter((uid) => !before.has(uid));
    if (added.length === 0) continue;
    if (hasSink) change.adding.set(partition, added);
    else change.takeOver.push(partition);
  }
  return change;
}
