/**
 * The locations a delivery may nudge, from `sources`: each configured location under its grant's name (the
 * name `{path}/{grant}` routes by). Uids compare case-insensitively (the API writes them lower case, a config
 * may not) and are answered as configured, the spelling the scheduler knows them by. Pure.
 */
import type { LocationDirectory } from './nudge-resolution.js';

export interface GrantDirectory extends LocationDirectory {
  hasGrant(grant: string): boolean;
}

export function locationDirectory(
  sources: ReadonlyArray<{ grant: string; locations: readonly string[] }>,
): GrantDirectory {
  const configured = new Map<string, string>();
  const byGrant = new Map<string, string[]>();
  for (const { grant, locations } of sources) {
    const list = byGrant.get(grant) ?? [];
    for (const uid of locations) {
      configured.set(uid.toLowerCase(), uid);
      list.push(uid);
    }
    byGrant.set(grant, list);
  }
  const all = [...configured.values()];
  return {
    has: (location) => configured.has(location.toLowerCase()),
    canonical: (location) => configured.get(location.toLowerCase()) ?? location,
    locationsOf: (grant) => (grant === null ? all : (byGrant.get(grant) ?? [])),
    hasGrant: (grant) => byGrant.has(grant),
  };
}
