/** A scheduler's LocationStatus for tests: a quiet location with nothing done yet, unless overridden. */
import { emptyTotals } from '../../../src/sync/location/location-sync.js';
import type { LocationStatus } from '../../../src/sync/scheduler/scheduled-location.js';

export function locationStatus(overrides: Partial<LocationStatus> = {}): LocationStatus {
  return {
    locationUid: '00000000-0000-4000-8000-0000000000a1',
    state: 'waiting',
    offset: { since: null, cursor: null, watermark: null, boundary: [] },
    traversalId: null,
    nextRunAt: null,
    lastSuccessAt: null,
    lastError: null,
    consecutiveFailures: 0,
    stoppedBy: null,
    totals: emptyTotals(),
    backfill: null,
    lane: null,
    ...overrides,
  };
}
