/**
 * What the scheduler knows of a location, and what it keeps about each one.
 *
 * `ScheduledLocation` is the part of a location the scheduler uses: run one page of a lane, whether a history
 * lane is left and whether its next page is read ahead, start reading it, and what the status view shows. Its
 * members are the ones of `LocationSync` the scheduler uses, with their names and signatures, so a
 * `LocationSync` is one without an adapter (the wiring type-checks it: runtime/partition-handover.ts hands
 * LocationSyncs to Scheduler.add); tests drive the scheduler with a scripted one
 * (test/support/sync/scripted-location.ts).
 *
 * `Slot` is the scheduler's bookkeeping of one location (due time, health, membership, backfill queue);
 * `LocationStatus` is the snapshot `Scheduler.status()` gives the demo's live view, /readyz and heartbeats.
 */
import type { BackfillFigures, BackfillProgress } from '../lanes/backfill.js';
import type { Lane } from '../lanes/lanes.js';
import type { LocationTotals } from '../location/location-counters.js';
import type { LocationOffset } from '../model.js';
import { pollPhase } from './poll-phase.js';
import type { AheadState } from '../location/read-ahead.js';

/** What a page's run tells the scheduler (LocationSync's PageReport carries these and more). */
export interface PageProgress {
  /** The lane's traversal ended with this page; for a history page, the lanes merged. */
  complete: boolean;
  /** Calls published by this page (0 when the traversal restarted). */
  published: number;
}

export interface ScheduledLocation {
  readonly locationUid: string;
  /**
   * Fetches, processes and commits one page of `lane` (live when not given). Called for one page at a time
   * per location; `signal` aborts the page (abandoned before its commit).
   */
  runPage(signal?: AbortSignal, lane?: Lane): Promise<PageProgress>;
  /** Whether the location is split and its history lane has pages left (runPage(signal, 'history')). */
  readonly hasHistory: boolean;
  /** The history lane's next page as read ahead: 'none', 'pending' (settles when read) or 'ready'. */
  historyAhead(): AheadState;
  /** Starts reading the history lane's next page ahead, under `signal`, unless one is read or a page runs. */
  prefetchHistory(signal?: AbortSignal): void;
  /** For the status view: the offset last committed, the traversal in progress, totals, the backfill. */
  readonly offset: LocationOffset;
  readonly traversalId: string | null;
  readonly totals: LocationTotals;
  readonly backfill: (BackfillFigures & BackfillProgress) | null;
}

/** throttled: parked until its rate-limit scope's hold ends (a Retry-After, a spent quota), without a worker. */
export type LocationState = 'waiting' | 'running' | 'backoff' | 'stopped' | 'throttled';

export interface LocationStatus {
  locationUid: string;
  state: LocationState;
  offset: LocationOffset;
  traversalId: string | null;
  /** When the location is due next (ms since epoch); null while running or stopped for good. */
  nextRunAt: number | null;
  lastSuccessAt: number | null;
  lastError: { code: string; message: string; at: number } | null;
  consecutiveFailures: number;
  /** The code of the error that stopped the location, until a page succeeds again; null when not stopped. */
  stoppedBy: string | null;
  totals: LocationTotals;
  /** A split location's backfill (lanes.ts) and its progress now; null when not split. */
  backfill: (BackfillFigures & BackfillProgress) | null;
  /** The lane of the turn in progress; null when not running. */
  lane: Lane | null;
}

/** The scheduler's bookkeeping of one location. */
export interface Slot {
  location: ScheduledLocation;
  /** The location's phase of the poll interval (poll-phase.ts), computed once. */
  phase: number;
  state: LocationState;
  /** When it is due (ms since epoch; infinite: never). Set by the due queue (due-queue.ts). */
  dueAt: number;
  /**
   * Its live lane completed a traversal since this scheduler got it (a start, a takeover, a rebalance). Until
   * then a scheduled poll of it is a `check` (turn-rule.ts): a first traversal looking for changes nobody
   * announced, which waits behind the nudged polls.
   */
  checked: boolean;
  lastSuccessAt: number | null;
  lastError: LocationStatus['lastError'];
  consecutiveFailures: number;
  /** Consecutive stops by a fatal error; reset by a page that makes progress. */
  stops: number;
  /** The code of the error that stopped the location, until a page succeeds again; null when not stopped. */
  stoppedBy: string | null;
  /** Aborts this location's page in flight (remove() past its bound) and its read-ahead (removal). */
  abort: AbortController;
  /** The signal of its pages: `abort` or the scheduler's hard stop (one per slot, not one per turn). */
  pageSignal: AbortSignal;
  /** The lane of the turn it was handed for. */
  lane: Lane;
  /** The rate-limit scope (grant) its requests go to (ports.ts RateLimitScopes). */
  scope: string;
}

/**
 * A new slot for `location`, waiting (its due time is the due queue's); `hardStop` aborts its pages too; its
 * requests go to rate-limit scope `scope`.
 */
export function slotFor(location: ScheduledLocation, hardStop: AbortSignal, scope = 'global'): Slot {
  const abort = new AbortController();
  return {
    location,
    phase: pollPhase(location.locationUid),
    state: 'waiting',
    dueAt: 0,
    checked: false,
    lastSuccessAt: null,
    lastError: null,
    consecutiveFailures: 0,
    stops: 0,
    stoppedBy: null,
    abort,
    pageSignal: AbortSignal.any([hardStop, abort.signal]),
    lane: 'live',
    scope,
  };
}

/** A slot's status snapshot. */
export function statusOf(slot: Slot): LocationStatus {
  const { location } = slot;
  return {
    locationUid: location.locationUid,
    state: slot.state,
    offset: location.offset,
    traversalId: location.traversalId,
    nextRunAt: slot.state !== 'running' && Number.isFinite(slot.dueAt) ? slot.dueAt : null,
    lastSuccessAt: slot.lastSuccessAt,
    lastError: slot.lastError,
    consecutiveFailures: slot.consecutiveFailures,
    stoppedBy: slot.stoppedBy,
    totals: { ...location.totals },
    backfill: location.backfill ?? null,
    lane: slot.state === 'running' ? slot.lane : null,
  };
}
