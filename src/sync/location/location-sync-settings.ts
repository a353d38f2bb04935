/**
 * LocationSync's settings (sync.*, privacy.*, kafka.tombstoneGoneCalls, lanes), its collaborators and its page
 * report.
 */
import type { Logger } from '../../logging/logger.js';
import type { BackoffPolicy } from '../../time/backoff.js';
import type { Clock } from '../../time/clock.js';
import type { Enricher } from './enricher.js';
import type { BoundaryFingerprints } from './fingerprint.js';
import type { Lane, LaneSettings } from '../lanes/lanes.js';
import type { LocationOffset, PrivacyPolicy } from '../model.js';
import type { CallsApi, LocationSignals, RecordSink, SyncMetrics } from '../ports.js';

export interface LocationSyncSettings {
  pageSize: number;
  /** `since` of a location's first traversal when it has no stored offset; null = from the beginning. */
  startSince: string | null;
  boundaryCap: number;
  /**
   * Bytes the boundary may take in the stored offset (traversal.ts, boundaryEntryBytes): the offsets
   * topic's max.message.bytes less the rest of the record. Unset: no byte bound (tests).
   */
  boundaryMaxBytes?: number;
  privacy: PrivacyPolicy;
  /** Keyed fingerprints of boundary records (fingerprint.ts: why keyed); one per connector, same on every instance. */
  fingerprints: BoundaryFingerprints;
  /** Backoff and attempts for rejected commits (the API retry policy's numbers serve well). */
  commitRetry: Readonly<BackoffPolicy>;
  /** A call GET reports gone: a tombstone instead of the unenriched record (kafka.tombstoneGoneCalls). */
  tombstoneGone?: boolean;
  /** Live and history lanes (lanes.ts); unset: never split. */
  lanes?: LaneSettings;
  /**
   * The age (ms, on the clock) past which a prepared page's single-call answers are asked again before it
   * commits (privacy.maxEnrichmentAgeMs; Enricher.refresh); unset: no bound (tests).
   */
  maxEnrichmentAgeMs?: number;
}

export interface LocationSyncOptions {
  locationUid: string;
  startOffset: LocationOffset;
  api: Pick<CallsApi, 'listPage'>;
  enricher: Enricher;
  sink: RecordSink;
  metrics: SyncMetrics;
  logger: Logger;
  settings: LocationSyncSettings;
  clock: Clock;
  /** The signals accepted for the location (backfill, reset), carried out before its pages; none when unset. */
  signals?: LocationSignals;
}

export interface PageReport {
  /**
   * The lane's traversal ended with this page (nextCursor null); for a history page, the history lane
   * reached T0 and the lanes merged.
   */
  complete: boolean;
  /** Calls published by this page (0 when the cursor was rejected and the traversal restarted). */
  published: number;
  /** The lane the page belonged to. */
  lane: Lane;
}
