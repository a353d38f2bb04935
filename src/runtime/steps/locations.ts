/**
 * Start-up step 4, the locations: every configured location once (a location listed twice is refused), how a
 * LocationSync is built for one of them once its offset and sink are known (the ownership step does it when it
 * takes the location's partition over), and how the Scheduler that runs them is built (once per writer: single mode
 * builds a new one when a standby takes over, runtime/writer-role.ts).
 */
import { rateLimitScopes } from '../../api/rate-limit/scope-holds.js';
import { livePollIntervalMs } from '../../config/sections/webhooks.js';
import { FatalError } from '../../errors/index.js';
import { LocationSync } from '../../sync/location/location-sync.js';
import { EMPTY_OFFSET, type LocationOffset } from '../../sync/model.js';
import type { LocationSignals, RecordSink } from '../../sync/ports.js';
import { Scheduler } from '../../sync/scheduler/scheduler.js';
import { reportingPublished, type PublishedCalls } from '../../webhooks/published-calls.js';
import type { Api, Source } from './api.js';
import type { StartContext } from './context.js';

export interface Locations {
  /** The configured location uids, in configuration order (a reload's once `reconfigure` accepted it). */
  readonly configured: readonly string[];
  /** Whether `locationUid` is configured, in any letter case (a signal names a location as its sender typed it). */
  isConfigured: (locationUid: string) => boolean;
  /** The configured locations not paused (`setPaused`): the ones to run, in configuration order. */
  readonly active: readonly string[];
  /** The locations paused by signals now (uids in lower case); replaces the set given before. */
  setPaused: (uids: ReadonlySet<string>) => void;
  readonly sourceOf: ReadonlyMap<string, Source>;
  /** A new Scheduler, holding no location yet (Scheduler.run is called once: each writer has its own). */
  newScheduler: () => Scheduler;
  /**
   * A LocationSync for `locationUid` from its stored offset (undefined: none stored), writing to `sink` (whose
   * commit outcomes say what is stored after an ambiguous commit or a new producer: sync/location/commit-outcome.ts).
   */
  syncFor: (locationUid: string, offset: LocationOffset | undefined, sink: RecordSink) => LocationSync;
  /**
   * Takes `sources` (a reload's, validated) as the configured ones: from now on `configured`, `sourceOf` and
   * `syncFor` follow them. A location listed twice is refused (CONFIG_DUPLICATE_LOCATION) and nothing changes.
   * Returns the uids added and removed; who runs them is the ownership's (PartitionHandover.reconfigure).
   */
  reconfigure: (sources: readonly Source[]) => { added: string[]; removed: string[] };
}

/** Each location's source; a location listed twice is refused. */
function sourcesByLocation(sources: readonly Source[]): Map<string, Source> {
  const sourceOf = new Map<string, Source>();
  for (const source of sources) {
    for (const locationUid of source.locations) {
      if (sourceOf.has(locationUid)) {
        throw new FatalError(
          'CONFIG_DUPLICATE_LOCATION',
          `location ${locationUid} is listed twice in sources; list each location once`,
        );
      }
      sourceOf.set(locationUid, source);
    }
  }
  return sourceOf;
}

function lowerCaseKeys(sourceOf: ReadonlyMap<string, Source>): Set<string> {
  return new Set([...sourceOf.keys()].map((uid) => uid.toLowerCase()));
}

export function buildLocations(
  ctx: StartContext,
  api: Api,
  options: {
    /** Bytes a location's boundary may take in its stored offset (kafka/offsets/offset-size.ts). */
    boundaryMaxBytes: number;
    /** Locations join and leave as partitions are taken over and let go (distributed mode). */
    dynamic: boolean;
    /** Told the calls of every stored page (webhooks.enabled: the uid index and the delivery ledger). */
    published?: PublishedCalls | undefined;
    /** The backfill and reset signals accepted for the locations (runtime/signals/signal-queue.ts). */
    signals?: LocationSignals;
  },
): Locations {
  const { config, logger, metrics, clock } = ctx;
  let sourceOf = sourcesByLocation(config.sources);
  let configuredLowerCase = lowerCaseKeys(sourceOf);
  let paused: ReadonlySet<string> = new Set();
  const empty = (): LocationOffset => ({ ...EMPTY_OFFSET, boundary: [] });
  const syncFor: Locations['syncFor'] = (locationUid, offset, sink) => {
    const source = sourceOf.get(locationUid);
    if (source === undefined) throw new Error(`syncFor: location ${locationUid} is not configured`);
    const { api: client, enricher } = api.grant(api.grantOf(source));
    return new LocationSync({
      locationUid,
      startOffset: offset ?? empty(),
      api: client,
      enricher,
      sink: options.published === undefined ? sink : reportingPublished(sink, options.published),
      metrics,
      logger,
      clock,
      ...(options.signals !== undefined && { signals: options.signals }),
      settings: {
        pageSize: config.api.pageSize,
        startSince: source.startSince ?? null,
        boundaryCap: config.poll.boundaryCap,
        boundaryMaxBytes: options.boundaryMaxBytes,
        privacy: config.privacy.customerPhoneNumber,
        maxEnrichmentAgeMs: config.privacy.maxEnrichmentAgeMs,
        fingerprints: api.fingerprints,
        commitRetry: config.api.retry,
        tombstoneGone: config.kafka.tombstoneGoneCalls,
        lanes: config.lanes,
      },
    });
  };
  const newScheduler = () =>
    new Scheduler({
      locations: [],
      dynamic: options.dynamic,
      settings: {
        maxLocationsInFlight: config.poll.maxLocationsInFlight,
        intervalMs: livePollIntervalMs(config),
        pagesPerTurn: config.poll.pagesPerTurn,
        shutdownTimeoutMs: config.poll.shutdownTimeoutMs,
        failureBackoff: { ...config.api.retry, maxAttempts: Number.MAX_SAFE_INTEGER },
        stoppedRetry: config.poll.stoppedRetry,
        historyShare: config.api.rateLimit.backfillShare,
        // No delivery nudges without the receiver: its share would only be borrowed.
        nudgeShare: config.webhooks.enabled ? config.api.rateLimit.nudgeShare : 0,
        reconciling: config.webhooks.enabled,
      },
      metrics,
      logger,
      clock,
      // A location of a held grant is parked without a worker, so one grant's hold cannot starve the others;
      // grants share the workers in turn.
      scopes: rateLimitScopes(api.transport.limiters, (uid) => {
        const source = sourceOf.get(uid);
        return source === undefined ? undefined : api.grantOf(source);
      }),
    });
  const reconfigure: Locations['reconfigure'] = (sources) => {
    const next = sourcesByLocation(sources);
    const added = [...next.keys()].filter((uid) => !sourceOf.has(uid));
    const removed = [...sourceOf.keys()].filter((uid) => !next.has(uid));
    sourceOf = next;
    configuredLowerCase = lowerCaseKeys(next);
    return { added, removed };
  };
  return {
    get configured() {
      return [...sourceOf.keys()];
    },
    isConfigured: (locationUid) => configuredLowerCase.has(locationUid.toLowerCase()),
    get active() {
      return [...sourceOf.keys()].filter((uid) => !paused.has(uid.toLowerCase()));
    },
    setPaused: (uids) => {
      paused = new Set(uids);
    },
    get sourceOf() {
      return sourceOf;
    },
    newScheduler,
    syncFor,
    reconfigure,
  };
}
