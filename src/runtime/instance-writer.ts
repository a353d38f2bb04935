/**
 * What the runtime runs and asks, in either mode: this instance's writer (a scheduler, its sinks, its locations)
 * and whether it writes or stands by. A writer stands down when a newer instance with the same connector.name
 * holds the transactional id (KAFKA_FENCED_BY_ANOTHER_INSTANCE, reported into `Failures`); what follows differs:
 * - single mode: a standby that takes over once no newer instance is a member of the group (writer-role.ts);
 * - distributed mode: one writer for good, whose partitions the group's assignments move; a stand-down stands
 *   by until stopped (distributed-writer.ts).
 *
 * Here: what both share. The role, read from `Failures` (a writer until its writer ended: the stand-down is
 * reported before the scheduler has stopped) with the time it began and the `instanceWriter` gauge; and one run
 * of a writer to its end.
 */
import type { FatalError } from '../errors/index.js';
import type { ConnectorMetrics } from '../metrics/metrics.js';
import type { LocationStatus } from '../sync/scheduler/scheduled-location.js';
import type { NudgeOutcome } from '../sync/scheduler/scheduler.js';
import type { WaitReason } from '../sync/scheduler/wait-reason.js';
import type { Clock } from '../time/clock.js';
import { FENCED_BY_NEWER_INSTANCE, type Failures } from './steps/context.js';

/** The parts one writer opened (a sink, its locations, their scheduler), closed as one. */
export interface Writer {
  /** Runs the locations until `signal` aborts or every one is stopped for good (Scheduler.run). */
  run(signal: AbortSignal): Promise<void>;
  status(): LocationStatus[];
  /** Why each location waits now (Scheduler.waitReasons; a pure query). */
  waitReasons(): Array<{ locationUid: string; reason: WaitReason }>;
  /** A webhook said the location changed: its live poll is due now (Scheduler.nudge). */
  nudge(locationUid: string): NudgeOutcome;
  /** Closes what the writer opened (its sink, the last page committed or aborted); idempotent. */
  close(): Promise<void>;
}

export type Role = 'writer' | 'standby';

export interface RoleStatus {
  role: Role;
  /** Since when (epoch ms, on the clock). */
  since: number;
}

/**
 * The runtime's view of this instance's writer. Contract: `run(signal)` once; it resolves after a graceful stop
 * (signal aborted) or once every location of the writer is stopped for good, and rejects with a fatal error
 * that is not a stand-down. `close()` closes the current writer (idempotent). The queries at any time.
 */
export interface InstanceWriter {
  /** Writer or standby, and since when. */
  status(): RoleStatus;
  /** The current writer's locations (a standby shows where its last writer left them). */
  locations(): LocationStatus[];
  /** Why each of the current writer's locations waits. */
  waitReasons(): Array<{ locationUid: string; reason: WaitReason }>;
  /**
   * A nudge reaches the current writer's scheduler; a standby schedules nothing ('unknown': the writing
   * instance has the location, and the API's delivery to it, or its reconciliation poll, publishes the change).
   */
  nudge(locationUid: string): NudgeOutcome;
  run(signal: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

/** The role as `failures` says it, since when, and the `instanceWriter` gauge. */
export class RoleRecord {
  private role: RoleStatus;

  constructor(
    private readonly failures: Pick<Failures, 'error'>,
    private readonly metrics: Pick<ConnectorMetrics, 'instanceWriter'>,
    private readonly clock: Pick<Clock, 'now'>,
  ) {
    this.role = { role: this.now(), since: clock.now() };
    metrics.instanceWriter.set(this.role.role === 'writer' ? 1 : 0);
  }

  /** A writer until its writer ended (the stand-down is reported before the scheduler has stopped). */
  now(): Role {
    return this.failures.error === null ? 'writer' : 'standby';
  }

  status(): RoleStatus {
    const role = this.now();
    if (role !== this.role.role) this.role = { role, since: this.clock.now() };
    return this.role;
  }

  /** The writer began or stopped running: the gauge follows. */
  set(role: Role): void {
    if (this.role.role !== role) this.role = { role, since: this.clock.now() };
    this.metrics.instanceWriter.set(role === 'writer' ? 1 : 0);
  }
}

/**
 * Runs `writer` until `signal` aborts or its writer ended. Resolves null after a stop (signal aborted, or every
 * location stopped for good), or with the stand-down it ended with; rejects with any other fatal error.
 */
export async function runToEnd(
  writer: Pick<Writer, 'run'>,
  signal: AbortSignal,
  failures: Pick<Failures, 'signal' | 'error'>,
): Promise<FatalError | null> {
  await writer.run(AbortSignal.any([signal, failures.signal]));
  const ended = failures.error;
  if (ended === null) return null;
  if (ended.code !== FENCED_BY_NEWER_INSTANCE) throw ended;
  return ended;
}

/** Resolves once `signal` aborts. */
export function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}
