/**
 * The scheduler's side of a configuration reload (reload.ts `LocationsPort`), in both modes: the locations'
 * sources become the new configuration's (steps/locations.ts), then the writer's partitions schedule the
 * locations added there and unschedule the ones removed (PartitionHandover.reconfigure; distributed mode, each
 * instance on its own partitions: every instance reloads the same file). A location whose grant or startSince
 * changed is first left out (its page in flight finishes and commits, then it stops), then started again under
 * its new source from its stored offset. A location listed before and after, read alike, is not touched.
 *
 * Rejects when the change could not be made (a location listed twice, the offsets of a partition unreadable):
 * the reloader then keeps its running configuration, and the next reload applies the difference again (both
 * steps are idempotent: what is already scheduled is left alone).
 */
import type { ConnectorConfig } from '../config/schema.js';
import type { LocationsPort } from './reload.js';
import type { Locations } from './steps/locations.js';
import type { Ownership } from './steps/ownership.js';

type Sources = ConnectorConfig['sources'];

export function locationReload(
  locations: Pick<Locations, 'reconfigure'>,
  ownership: Pick<Ownership, 'reconfigure'>,
): LocationsPort {
  return {
    applyLocations: async (diff, next) => {
      const changed = new Set(diff.locations.changed.map((c) => c.to.location.toLowerCase()));
      if (changed.size > 0) {
        locations.reconfigure(withoutLocations(next.sources, changed));
        await ownership.reconfigure();
      }
      locations.reconfigure(next.sources);
      await ownership.reconfigure();
    },
  };
}

/** `sources` without the locations in `left` (lower-case uids). */
function withoutLocations(sources: Sources, left: ReadonlySet<string>): Sources {
  return sources.map((source) => ({
    ...source,
    locations: source.locations.filter((uid) => !left.has(uid.toLowerCase())),
  }));
}
