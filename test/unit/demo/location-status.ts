/** A location's status as the scheduler reports it, for the live view's tests. */
import type { LocationStatus } from '../../../src/sync/scheduler.js';

export function locationStatus(
  uid: string,
  published: number,
  overrides: Partial<LocationStatus> = {},
): LocationStatus {
  return {
    locationUid: uid,
    state: 'running',
    offset: { since: null, cursor: null, watermark: '2026-01-01T00:00:00.000Z', boundary: [] },
    traversalId: null,
    nextRunAt: null,
    lastSuccessAt: null,
    lastError: null,
    consecutiveFailures: 0,
    stoppedBy: null,
    totals: {
      pages: 1,
      published,
      deadLettered: 0,
      deduplicated: 2,
      redacted: 3,
      belowWatermark: 0,
      traversalsCompleted: 1,
    },
    ...overrides,
  };
}
