/**
 * A LocationSync for the scheduler's unit tests: from the empty offset, pages of two calls, the unit tests'
 * boundary fingerprints, no log. The caller gives the API (an in-memory fake), the enricher, sink, metrics
 * and clock.
 */
import { DEFAULT_RETRY_POLICY } from '../../../src/api/retry-policy.js';
import { silentLogger } from '../../../src/logging/logger.js';
import type { Clock } from '../../../src/time/clock.js';
import type { Enricher } from '../../../src/sync/enricher.js';
import { LocationSync } from '../../../src/sync/location-sync.js';
import { EMPTY_OFFSET } from '../../../src/sync/model.js';
import type { CallsApi, RecordSink, SyncMetrics } from '../../../src/sync/ports.js';
import { testFingerprints } from './fingerprints.js';

export function unitLocationSync(options: {
  locationUid: string;
  api: Pick<CallsApi, 'listPage'>;
  enricher: Enricher;
  sink: RecordSink;
  metrics: SyncMetrics;
  clock: Clock;
}): LocationSync {
  return new LocationSync({
    ...options,
    startOffset: EMPTY_OFFSET,
    logger: silentLogger(),
    settings: {
      pageSize: 2,
      startSince: null,
      boundaryCap: 100,
      privacy: 'redact-unless-public',
      fingerprints: testFingerprints,
      commitRetry: DEFAULT_RETRY_POLICY,
    },
  });
}
