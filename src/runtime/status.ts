/**
 * The body of `GET /status`: the connector and each location in the shape of Kafka Connect's status API
 * (`GET /connectors/{name}/status`), so operators and tools that read Connect statuses read ours. A location
 * plays the part of a Connect task: it is the unit that runs, fails and recovers on its own.
 *
 * States, Connect's words: RUNNING (traversing, or waiting for its next poll), RESTARTING (a traversal
 * failed, retried after a backoff), FAILED (stopped by a fatal error; `trace` says what, and `next_run_at`
 * when it is retried by itself, see sync/healing.ts), UNASSIGNED (the connector is starting). Our own finer state and the offset are added beside Connect's keys.
 *
 * Pure: the caller passes the scheduler's snapshot. Holds no secrets (error messages are the scrubbed ones
 * the logs carry; cursors are the API's opaque page positions).
 */
import type { LocationStatus } from '../sync/scheduler.js';

export type ConnectState = 'UNASSIGNED' | 'RUNNING' | 'RESTARTING' | 'FAILED';

export interface LocationTaskStatus {
  /** The location uid: Connect's task id. */
  id: string;
  state: ConnectState;
  worker_id: string;
  /** Present when FAILED or RESTARTING: the error code and message. */
  trace?: string;
  /** Ours: waiting, running, backoff or stopped. */
  phase: LocationStatus['state'];
  traversal_id: string | null;
  offset: { since: string | null; cursor: string | null; watermark: string | null };
  last_success_at: string | null;
  next_run_at: string | null;
  consecutive_failures: number;
}

/** The offsets-topic partitions this instance owns (distributed mode: its group assignment). */
export interface AssignmentStatus {
  partitions: number[];
  /** The instances group's generation; null in single mode, or before the first heartbeat confirmed it. */
  generationId: number | null;
}

export interface ConnectorStatus {
  name: string;
  connector: { state: ConnectState; worker_id: string; trace?: string };
  /** Only the locations this instance owns (all of them in single mode). */
  tasks: LocationTaskStatus[];
  type: 'source';
  /** Present once known: what this instance owns. */
  assignment?: AssignmentStatus;
}

const STATE_OF: Record<LocationStatus['state'], ConnectState> = {
  waiting: 'RUNNING',
  running: 'RUNNING',
  backoff: 'RESTARTING',
  stopped: 'FAILED',
};

function isoOrNull(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

/**
 * `locations` null: the connector is still starting (no scheduler yet). `fatal`: the error that stopped the
 * whole connector (fenced, say). The connector is FAILED when fatal or when every location is stopped.
 */
export function connectorStatus(
  name: string,
  workerId: string,
  locations: readonly LocationStatus[] | null,
  fatal: { code: string; message: string } | null = null,
  assignment: AssignmentStatus | null = null,
): ConnectorStatus {
  const tasks = (locations ?? []).map((location): LocationTaskStatus => {
    const state = STATE_OF[location.state];
    const error = location.lastError;
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
      },
      last_success_at: isoOrNull(location.lastSuccessAt),
      next_run_at: isoOrNull(location.nextRunAt),
      consecutive_failures: location.consecutiveFailures,
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
  return { name, connector, tasks, type: 'source', ...(assignment !== null && { assignment }) };
}
