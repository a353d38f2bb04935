/**
 * A LocationSync for unit tests: from the empty offset unless `startOffset` says, pages of two calls, the
 * unit tests' boundary fingerprints, no log; `settings` overrides any setting (lanes, the commit retry). The
 * caller gives the API (an in-memory fake), the enricher, sink, metrics and clock.
 */
import { DEFAULT_RETRY_POLICY } from '../../../src/api/retry-policy.js';
import { silentLogger } from '../../../src/logging/logger.js';
import type { Clock } from '../../../src/time/clock.js';
import type { Enricher } from '../../../src/sync/location/enricher.js';
import { LocationSync, type LocationSyncSettings } from '../../../src/sync/location/location-sync.js';
import { EMPTY_OFFSET, type LocationOffset } from '../../../src/sync/model.js';
import type { CallsApi, LocationSignals, RecordSink, SyncMetrics } from '../../../src/sync/ports.js';
import { testFingerprints } from './fingerprints.js';

export function unitLocationSync(options: {
  locationUid: string;
  api: Pick<CallsApi, 'listPage'>;
  enricher: Enricher;
  sink: RecordSink;
  metrics: SyncMetrics;
  clock: Clock;
  startOffset?: LocationOffset;
  settings?: Partial<LocationSyncSettings>;
  signals?: LocationSignals;
}): LocationSync {
  const { startOffset, settings, ...deps } = options;
  return new LocationSync({
    ...deps,
    startOffset: startOffset ?? EMPTY_OFFSET,
    logger: silentLogger(),
    settings: {
      pageSize: 2,
      startSince: null,
      boundaryCap: 100,
      privacy: 'redact-unless-public',
      fingerprints: testFingerprints,
      commitRetry: DEFAULT_RETRY_POLICY,
      ...settings,
    },
  });
}
