/**
 * Which of this connector's locations a nudge concerns, and how that was decided (counted by
 * `calls_connector_webhook_nudges_total{resolution}`):
 * - `payload_location`: the payload names a configured location;
 * - `indexed_uid`: it names none, but the connector published this uid for a location (uid-locations.ts);
 * - `grant_fanout`: neither: every location of the delivery's grant (every configured location when the
 *   delivery does not say its grant), coalesced by the scheduler.
 *
 * A payload location this connector does not sync is not ours: no location, counted as ignored. Pure.
 */
import type { Nudge } from './payload-mapping.js';

export type NudgeResolution = 'payload_location' | 'indexed_uid' | 'grant_fanout';

export interface ResolvedNudge {
  uid: string;
  event: string;
  locations: readonly string[];
  resolution: NudgeResolution;
}

export interface LocationDirectory {
  /** Whether this connector syncs the location (any grant). */
  has(location: string): boolean;
  /** The configured spelling of a location `has` knows. */
  canonical(location: string): string;
  /** The locations of a grant; of every grant when `grant` is null. Empty for an unknown grant. */
  locationsOf(grant: string | null): readonly string[];
}

export function resolveNudge(
  nudge: Nudge,
  grant: string | null,
  directory: LocationDirectory,
  index: { locationOf(uid: string): string | undefined },
): ResolvedNudge | null {
  const base = { uid: nudge.uid, event: nudge.event };
  if (nudge.location !== null) {
    return directory.has(nudge.location)
      ? { ...base, locations: [directory.canonical(nudge.location)], resolution: 'payload_location' }
      : null;
  }
  const indexed = index.locationOf(nudge.uid);
  if (indexed !== undefined && directory.has(indexed))
    return { ...base, locations: [directory.canonical(indexed)], resolution: 'indexed_uid' };
  const locations = directory.locationsOf(grant);
  return locations.length === 0 ? null : { ...base, locations, resolution: 'grant_fanout' };
}
