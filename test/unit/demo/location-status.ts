/** A location's status as the scheduler reports it mid-run, for the live view's tests. */
import type { LocationStatus } from '../../../src/sync/scheduler/scheduled-location.js';
import { locationStatus as quietLocation } from '../../support/sync/location-status.js';

/** Location `uid` running, one traversal done with `published` calls published (2 deduplicated, 3 redacted). */
export function locationStatus(
  uid: string,
  published: number,
  overrides: Partial<LocationStatus> = {},
): LocationStatus {
  return quietLocation({
    locationUid: uid,
    state: 'running',
    offset: { since: null, cursor: null, watermark: '2026-01-01T00:00:00.000Z', boundary: [] },
    totals: {
      pages: 1,
      published,
      deadLettered: 0,
      deduplicated: 2,
      redacted: 3,
      belowWatermark: 0,
      traversalsCompleted: 1,
      caughtUpAt: null,
    },
    ...overrides,
  });
}
