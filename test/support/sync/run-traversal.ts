import type { LocationSync, LocationTotals } from '../../../src/sync/location/location-sync.js';

/** Runs pages of `sync` until its traversal completes; returns its totals then (the scheduler runs pages one by one). */
export async function runTraversal(sync: LocationSync, signal?: AbortSignal): Promise<LocationTotals> {
  for (;;) {
    const report = await sync.runPage(signal);
    if (report.complete) return { ...sync.totals };
  }
}
