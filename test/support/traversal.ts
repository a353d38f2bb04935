/** Drives a LocationSync the way the scheduler does, one page at a time, for tests that want whole traversals. */
import type { LocationSync, LocationTotals } from '../../src/sync/location-sync.js';

/** Runs pages until the traversal completes (nextCursor null); the location's totals then. */
export async function traverse(sync: LocationSync, signal?: AbortSignal): Promise<LocationTotals> {
  for (;;) {
    const report = await sync.runPage(signal);
    if (report.complete) return { ...sync.totals };
  }
}
