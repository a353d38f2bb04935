/**
 * The body of `GET /status`: the connector and each location in the shape of Kafka Connect's status API
 * (`GET /connectors/{name}/status`), so operators and tools that read Connect statuses read ours. A location
 * plays the part of a Connect task: it is the unit that runs, fails and recovers on its own.
 *
 * States, Connect's words: RUNNING (traversing, or waiting for its next poll), RESTARTING (a traversal
 * failed, retried after a backoff), FAILED (stopped by a fatal error; `trace` says what, and `next_run_at`
 * when it is retried by itself, see sync/scheduler/health-rule.ts), UNASSIGNED (the connector is starting). Our own finer state and the offset are added beside Connect's keys.
 *
 * Freshness (with a `FreshnessView`): each location's lag (now minus the start of its last completed live poll:
 * no unpublished change is older) and why it waits now (its interval, the stretch, a rate-limit hold, its
 * history lane's turn, a backoff), so an operator reading a lag sees its cause beside it.
 *
 * Pure: the caller passes the scheduler's snapshot. Holds no secrets (error messages are the scrubbed ones
 * the logs carry; cursors are the API's opaque page positions).
 */
import type { ScopeStatus } from '../api/rate-limit/registry.js';
import type { LocationStatus } from '../sync/scheduler/scheduled-location.js';
import type { WaitReason as SchedulerWaitReason } from '../sync/scheduler/wait-reason.js';

export type ConnectState = 'UNASSIGNED' | 'RUNNING' | 'RESTARTING' | 'FAILED';

export interface LocationTaskStatus {
  /** The location uid: Connect's task id. */
  id: string;
  state: ConnectState;
  worker_id: string;
  /** Present when FAILED or RESTARTING: the error code and message. */
  trace?: string;
  /** Ours: waiting, running, backoff, stopped or throttled (parked until its grant's hold ends). */
  phase: LocationStatus['state'];
  traversal_id: string | null;
  offset: {
    since: string | null;
    cursor: string | null;
    watermark: string | null;
    /** A split location's history lane (docs/sync.md "Lanes"): its position and T0 (`until`). */
    history?: { since: string | null; cursor: string | null; watermark: string | null; until: string };
  };
  /**
   * Present while the location is split: its history lane's progress. `position` is the lane's watermark
   * (else since) and `until` T0; `remaining_seconds` the API time left to read (the API gives no record count);
   * `rate` the API seconds read per second so far and `eta_seconds` the time left at that rate (null before
   * any progress); `records` what the history lane published in this process.
   */
  backfill?: {
    until: string;
    position: string | null;
    remaining_seconds: number | null;
    rate: number | null;
    eta_seconds: number | null;
    records: number;
  };
  last_success_at: string | null;
  next_run_at: string | null;
  consecutive_failures: number;
  /**
   * Present with the freshness view: seconds since the location's last completed live poll began (every change
   * made before then is in Kafka); null before one completed.
   */
  lag_seconds?: number | null;
  /** Present with the freshness view: what the location waits for now, and until when. */
  waiting?: WaitStatus;
  /**
   * Present while the location's rate-limit scope is parked (a Retry-After beyond api.retry.maxRetryAfterMs,
   * a quota announced as spent): its requests wait until then, and it resumes by itself. Not an error.
   */
  throttled_until?: string;
}

/**
 * Why a location is not polling now:
 * - interval: its next poll at the configured interval (`until`);
 * - stretched: at the effective interval, longer than the configured one (the live polls alone would exceed
 *   their share of the API budget or of the workers, docs/runbook.md "Polls stretched");
 * - hold: its rate-limit scope is held (a Retry-After, a spent quota) until `until`;
 * - history_turn: a turn of its history lane runs (its live poll waits for the turn's commit);
 * - backoff: a failed traversal is retried at `until`; stopped: stopped by a fatal error, retried at `until`;
 * - running: its live poll runs now; worker: due now, waiting for a free worker.
 * The scheduler may name the reason itself (FreshnessView.waitReasonOf); otherwise it is read off the state.
 */
export type WaitReason =
  'interval' | 'stretched' | 'hold' | 'history_turn' | 'backoff' | 'stopped' | 'running' | 'worker';

export interface WaitStatus {
  reason: WaitReason;
  /** When the wait ends (ISO 8601), when known. */
  until: string | null;
  /** poll.intervalMs (webhooks.reconcileIntervalMs with webhooks on), and the interval polled at now. */
  interval_ms: number;
  effective_interval_ms: number;
}

/**
 * What /status needs to show freshness: now, the configured and effective poll intervals and, when the
 * scheduler can tell it (a pure query over its bookkeeping), each location's wait reason and its end.
 */
export interface FreshnessView {
  nowMs: number;
  intervalMs: number;
  /** The interval the scheduler polls at now (the calls_connector_poll_effective_interval_seconds gauge); null: not set yet. */
  effectiveIntervalMs: number | null;
  waitReasonOf?: (locationUid: string) => { reason: WaitReason; untilMs: number | null } | null;
}

/** One limiter scope (a grant, or global) as /status shows it. */
export interface RateLimitScopeStatus {
  scope: string;
  /** flowing; held (a short Retry-After: flow control); throttled (parked until held_until). */
  state: 'flowing' | 'held' | 'throttled';
  rate_per_second: number;
  announced_per_second: number | null;
  held_until: string | null;
  waiting: { live: number; backfill: number };
}

/** The rate limiters and which scope each location's requests use. */
export interface RateLimitView {
  scopes: readonly ScopeStatus[];
  scopeOf(locationUid: string): string;
}

/** The offsets-topic partitions this instance owns (distributed mode: its group assignment). */
export interface AssignmentStatus {
  partitions: number[];
  /** The instances group's generation; null in single mode, or before the first heartbeat confirmed it. */
  generationId: number | null;
}

/** Single mode: which instance writes (holds the transactional id) and which stands by (runtime/writer-role.ts). */
export interface InstanceRoleStatus {
  role: 'writer' | 'standby';
  /** Since when (ISO 8601). */
  since: string;
}

/**
 * Which configuration this instance runs, and, as it last saw the group `<connector.name>-configurations`
 * (kafka/group/configuration-peers.ts), which the other instances run: `agreement` agreed (one fingerprint
 * everywhere), differs (two or more: the log and docs/operations.md say what runs meanwhile) or unknown (no view
 * yet, or the group cannot be reached).
 */
export interface ConfigurationStatus {
  fingerprint: string;
  agreement: 'agreed' | 'differs' | 'unknown';
  /** Each fingerprint run, with how many instances run it and their names (host:pid@start); the most first. */
  peers: Array<{ fingerprint: string; instances: number; names: string[] }>;
  /** Present when some members' metadata could not be read (another version, another client). */
  unreadable?: number;
}

/** The plain view as /status shows it. */
export function configurationStatus(view: {
  state: ConfigurationStatus['agreement'];
  fingerprint: string;
  peers: ReadonlyArray<{ fingerprint: string; instances: readonly string[] }>;
  unreadable: number;
}): ConfigurationStatus {
  return {
    fingerprint: view.fingerprint,
    agreement: view.state,
    peers: view.peers.map((p) => ({
      fingerprint: p.fingerprint,
      instances: p.instances.length,
      names: [...p.instances],
    })),
    ...(view.unreadable > 0 && { unreadable: view.unreadable }),
  };
}

export interface ConnectorStatus {
  name: string;
  connector: { state: ConnectState; worker_id: string; trace?: string };
  /** Only the locations this instance owns (all of them in single mode). */
  tasks: LocationTaskStatus[];
  type: 'source';
  /** Present once known: what this instance owns. */
  assignment?: AssignmentStatus;
  /** The API rate limiters (docs/rate-limits.md), once the connector runs. */
  rate_limits?: RateLimitScopeStatus[];
  /** Single mode, once the connector runs: writer or standby, and since when. */
  instance?: InstanceRoleStatus;
}

const STATE_OF: Record<LocationStatus['state'], ConnectState> = {
  waiting: 'RUNNING',
  running: 'RUNNING',
  backoff: 'RESTARTING',
  stopped: 'FAILED',
  throttled: 'RUNNING',
};

function isoOrNull(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

/**
 * `locations` null: the connector is still starting (no scheduler yet). `fatal`: the error that stopped the
 * whole connector, or the writer (fenced, say: `role` standby). The connector is FAILED when fatal or when every location is stopped.
 */
export function connectorStatus(
  name: string,
  workerId: string,
  locations: readonly LocationStatus[] | null,
  fatal: { code: string; message: string } | null = null,
  assignment: AssignmentStatus | null = null,
  rateLimits: RateLimitView | null = null,
  role: { role: 'writer' | 'standby'; since: number } | null = null,
  freshness: FreshnessView | null = null,
): ConnectorStatus {
  const parked = new Map(
    (rateLimits?.scopes ?? []).flatMap((s) =>
      s.throttled && s.heldUntilMs !== null ? [[s.scope, s.heldUntilMs] as const] : [],
    ),
  );
  const held = new Map(
    (rateLimits?.scopes ?? []).flatMap((s) =>
      s.heldUntilMs !== null ? [[s.scope, s.heldUntilMs] as const] : [],
    ),
  );
  const tasks = (locations ?? []).map((location): LocationTaskStatus => {
    const state = STATE_OF[location.state];
    const error = location.lastError;
    const throttledUntil =
      rateLimits === null ? undefined : parked.get(rateLimits.scopeOf(location.locationUid));
    return {
      id: location.locationUid,
      state,
      worker_id: workerId,
      ...(state !== 'RUNNING' && error !== null && { trace: `${error.code}: ${error.message}` }),
      phase: location.state,
      traversal_id: location.traversalId,
      offset: {
        since: location.offset.since,
        cursor: location.offset.cursor,
        watermark: location.offset.watermark,
        ...(location.offset.history !== undefined && {
          history: {
            since: location.offset.history.since,
            cursor: location.offset.history.cursor,
            watermark: location.offset.history.watermark,
            until: location.offset.history.until,
          },
        }),
      },
      ...(location.backfill !== null &&
        location.backfill !== undefined && { backfill: backfillStatus(location.backfill) }),
      last_success_at: isoOrNull(location.lastSuccessAt),
      next_run_at: isoOrNull(location.nextRunAt),
      consecutive_failures: location.consecutiveFailures,
      ...(freshness !== null && {
        lag_seconds:
          location.totals.caughtUpAt === null
            ? null
            : Math.max(0, Math.round((freshness.nowMs - location.totals.caughtUpAt) / 100) / 10),
        waiting: waitStatus(
          location,
          freshness,
          rateLimits === null ? null : (held.get(rateLimits.scopeOf(location.locationUid)) ?? null),
        ),
      }),
      ...(throttledUntil !== undefined && { throttled_until: new Date(throttledUntil).toISOString() }),
    };
  });
  const allStopped = tasks.length > 0 && tasks.every((t) => t.state === 'FAILED');
  const connector: ConnectorStatus['connector'] =
    fatal !== null
      ? { state: 'FAILED', worker_id: workerId, trace: `${fatal.code}: ${fatal.message}` }
      : locations === null
        ? { state: 'UNASSIGNED', worker_id: workerId }
        : allStopped
          ? { state: 'FAILED', worker_id: workerId, trace: 'every location is stopped: see each task' }
          : { state: 'RUNNING', worker_id: workerId };
  return {
    name,
    connector,
    tasks,
    type: 'source',
    ...(assignment !== null && { assignment }),
    ...(rateLimits !== null && { rate_limits: rateLimits.scopes.map(scopeStatus) }),
    ...(role !== null && { instance: { role: role.role, since: new Date(role.since).toISOString() } }),
  };
}

/** The scheduler's wait reason (sync/scheduler/wait-reason.ts) as /status names it, with when it ends (null: unknown). */
export function statusWaitOf(reason: SchedulerWaitReason): { reason: WaitReason; untilMs: number | null } {
  switch (reason.kind) {
    case 'running':
      return { reason: reason.lane === 'history' ? 'history_turn' : 'running', untilMs: null };
    case 'worker':
      return { reason: 'worker', untilMs: null };
    case 'interval':
      return { reason: 'interval', untilMs: reason.nextRunAt };
    case 'stretch':
      return { reason: 'stretched', untilMs: reason.nextRunAt };
    case 'hold':
      return { reason: 'hold', untilMs: reason.until };
    case 'backoff':
      return { reason: 'backoff', untilMs: reason.nextRunAt };
    case 'stopped':
      return { reason: 'stopped', untilMs: reason.nextRunAt };
  }
}

/** Why `location` waits (WaitReason): the scheduler's answer when it gives one, else read off its state. */
export function waitStatus(
  location: LocationStatus,
  freshness: FreshnessView,
  heldUntilMs: number | null,
): WaitStatus {
  const effective = Math.max(freshness.effectiveIntervalMs ?? freshness.intervalMs, freshness.intervalMs);
  const intervals = { interval_ms: freshness.intervalMs, effective_interval_ms: Math.round(effective) };
  const given = freshness.waitReasonOf?.(location.locationUid) ?? null;
  if (given !== null) return { reason: given.reason, until: isoOrNull(given.untilMs), ...intervals };
  const next = location.nextRunAt;
  const at = (reason: WaitReason, untilMs: number | null): WaitStatus => ({
    reason,
    until: isoOrNull(untilMs),
    ...intervals,
  });
  switch (location.state) {
    case 'running':
      return at(location.lane === 'history' ? 'history_turn' : 'running', null);
    case 'stopped':
      return at('stopped', next);
    case 'backoff':
      return at('backoff', next);
    case 'throttled':
      return at('hold', heldUntilMs ?? next);
    case 'waiting':
      if (heldUntilMs !== null && heldUntilMs > freshness.nowMs) return at('hold', heldUntilMs);
      return at(effective > freshness.intervalMs ? 'stretched' : 'interval', next);
  }
}

function backfillStatus(
  backfill: NonNullable<LocationStatus['backfill']>,
): NonNullable<LocationTaskStatus['backfill']> {
  const round = (n: number | null) => (n === null ? null : Math.round(n * 10) / 10);
  return {
    until: new Date(backfill.untilMs).toISOString(),
    position: isoOrNull(backfill.positionMs),
    remaining_seconds: round(backfill.remainingSeconds),
    rate: round(backfill.rate),
    eta_seconds: round(backfill.etaSeconds),
    records: backfill.records,
  };
}

function scopeStatus(scope: ScopeStatus): RateLimitScopeStatus {
  return {
    scope: scope.scope,
    state: scope.throttled ? 'throttled' : scope.heldUntilMs !== null ? 'held' : 'flowing',
    rate_per_second: Math.round(scope.ratePerSecond * 100) / 100,
    announced_per_second: scope.announcedPerSecond,
    held_until: isoOrNull(scope.heldUntilMs),
    waiting: scope.waiting,
  };
}
