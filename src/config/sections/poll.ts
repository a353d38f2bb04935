/**
 * `poll` (how often and how many locations are polled, and how stopped ones are retried) and `lanes` (a
 * location far behind split into a live and a history lane).
 *
 * The stopped-location backoff's defaults are the sync core's (sync/scheduler/health-rule.ts): config is an adapter, so it
 * imports them from the core, and the core imports no configuration.
 */
import { z } from 'zod';
import { DEFAULT_STOPPED_RETRY } from '../../sync/scheduler/health-rule.js';
import { durationMs } from '../duration.js';

export const pollSchema = z
  .object({
    /** Time between a location's polls, each at its own phase of the interval (sync/scheduler/poll-phase.ts). */
    intervalMs: durationMs().default(60_000),
    /** Locations traversed at the same time. */
    maxLocationsInFlight: z.number().int().min(1).max(1024).default(4),
    /** Most uids kept for the inclusive `since` boundary; see docs/how-it-works.md "boundary cap". */
    boundaryCap: z.number().int().min(1).max(1_000_000).default(5_000),
    /** Bounded shutdown: abort what is open after this long. */
    shutdownTimeoutMs: durationMs().default(30_000),
    /**
     * Pages a location processes before yielding its slot to the next ready location (fairness: a long
     * backfill does not starve the others; a larger value keeps cursors fresher).
     */
    pagesPerTurn: z.number().int().min(1).max(10_000).default(20),
    /**
     * A location stopped by an error that can heal (403, cursor loop, revoked grant, ...; see
     * docs/sync.md) is tried again after initialDelayMs, growing by multiplier per consecutive stop up
     * to maxDelayMs, shortened at random by up to `jitter` of it.
     */
    stoppedRetry: z
      .object({
        initialDelayMs: durationMs(1_000).default(DEFAULT_STOPPED_RETRY.initialDelayMs),
        maxDelayMs: durationMs(1_000).default(DEFAULT_STOPPED_RETRY.maxDelayMs),
        multiplier: z.number().min(1).max(10).default(DEFAULT_STOPPED_RETRY.multiplier),
        jitter: z.number().min(0).max(1).default(DEFAULT_STOPPED_RETRY.jitter),
      })
      .strict()
      .refine((r) => r.maxDelayMs >= r.initialDelayMs, {
        message: 'maxDelayMs must be >= initialDelayMs',
        path: ['maxDelayMs'],
      })
      .prefault({}),
  })
  .strict()
  .prefault({});

/**
 * The present first (docs/sync.md "Lanes"): a location with no stored offset, or one behind the API's
 * newest change by more than splitBacklogMs, is split at T0 (an updatedAt the API wrote, at or before its newest less overlapMs) into a
 * live lane polled every interval from T0 and a history lane reading up to T0 with the budget the live
 * lanes leave.
 */
export const lanesSchema = z
  .object({
    /** false: never split (one lane per location, history before the present). */
    enabled: z.boolean().default(true),
    /** T0 is an updatedAt at or before the API's newest minus this, so changes written slightly out of order are not missed. */
    overlapMs: durationMs().default(60_000),
    /** A stored position older than the API's newest change by more than this is split; 0 = never. */
    splitBacklogMs: durationMs().default(3_600_000),
    /**
     * `limit` of history pages (at most api.pageSize): a split location's live poll waits for its history
     * page in flight, so short history pages keep it fresh (one more listing request per this many calls).
     */
    historyPageSize: z.number().int().min(1).max(100).default(20),
    /**
     * Calls of a same-instant group (a bulk import at one instant) one history page publishes, and a live lane
     * lists ahead, while the
     * boundary (poll.boundaryCap) can hold the group; past it the rest of the group is one page.
     */
    groupPieceSize: z.number().int().min(1).max(100_000).default(1_000),
  })
  .strict()
  .prefault({});
