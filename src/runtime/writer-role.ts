/**
 * Which role this instance has, writer or standby, and single mode's hot standby: an instance whose writer stood
 * down because a newer instance with the same connector.name holds the transactional id (the sink's
 * KAFKA_FENCED_BY_ANOTHER_INSTANCE) stays a member of the instances group `<name>-instances` and takes over as
 * soon as no newer instance is a member: single mode is active/passive. Without it a standby stood by for ever
 * once the newer instance was stopped (a blue/green switch rolled back, a rolling upgrade whose re-initialisation
 * counted an earlier version's member as newer): nobody wrote, and /healthz stayed green (issue 32, review L4).
 *
 * Kafka's group membership is the only coordinator: the standby waits for a completed rebalance of the group
 * (`rejoined`: a member joined, left or expired), then asks the same question every initialisation asks,
 * `newest('again')`: a takeover initialises the id again, so a member of an earlier version (no start stamp)
 * counts as newer, as at any re-initialisation (kafka/group/start-stamp.ts), and the standby takes over only once
 * that member has left too. A re-check every `recheckMs` on the clock is the safety net should a rebalance go
 * unseen; nothing else polls the group.
 *
 * Taking over opens the writer again through `open(true)`, the start's own path: a new sink whose initialisation
 * fences any zombie producer of the id and settles its open transaction, then the offsets read afresh, then a new
 * scheduler of the locations. What a stand-down leaves is closed first (its writer's own lifecycle: the scheduler
 * has stopped, the sink closes). A takeover that fails holding nothing (Kafka unavailable, a newer instance came
 * meanwhile) stands by again; one that fails for good (a fatal error) ends `run` with it.
 *
 * Contract: `run(signal)` once; it resolves after a graceful stop (signal aborted) or once every location of
 * the writer is stopped for good, and rejects with a fatal error that is not a stand-down. `close()` closes the
 * current writer (idempotent). `status()` at any time.
 */
import type { FatalError } from '../errors/index.js';
import type { Initialisation } from '../kafka/group/start-stamp.js';
import type { Logger } from '../logging/logger.js';
import type { ConnectorMetrics } from '../metrics/metrics.js';
import type { LocationStatus } from '../sync/scheduler/scheduled-location.js';
import type { WaitReason } from '../sync/scheduler/wait-reason.js';
import type { NudgeOutcome } from '../sync/scheduler/scheduler.js';
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

/** Kafka's instances group as a standby watches it (kafka/group/instance-presence.ts implements it). */
export interface InstancesGroupWatch {
  /** Completed joins of this instance's member so far: one per rebalance of the group. */
  readonly joins: number;
  /** Resolves once `joins` exceeds `seen`; rejects when `signal` aborts. */
  rejoined(seen: number, signal: AbortSignal): Promise<void>;
  /** Whether no instance started after this one is a member (InstancePresence.newest). */
  newest(initialisation: Initialisation): Promise<boolean>;
}

export type Role = 'writer' | 'standby';

export interface RoleStatus {
  role: Role;
  /** Since when (epoch ms, on the clock). */
  since: number;
}

/** How often a standby asks the group again without a rebalance seen (the safety net; see the module comment). */
export const STANDBY_RECHECK_MS = 30_000;

/** A takeover initialises the transactional id again: this instance has held it before. */
export const TAKEOVER_INITIALISATION: Initialisation = 'again';

export interface WriterRoleOptions {
  /** The writer opened by the start (it may hold nothing: the start stood down). */
  first: Writer;
  /** Opens the writer again to take over; rejects holding nothing. */
  open(): Promise<Writer>;
  /** Single mode: the instances group to watch while standing by; null: stand by until stopped. */
  group: InstancesGroupWatch | null;
  /** `group.joins` when the first writer was opened: a rebalance since then may have let it take over. */
  joinsAtStart: number;
  failures: Failures;
  metrics: Pick<ConnectorMetrics, 'instanceWriter'>;
  logger: Logger;
  clock: Clock;
  recheckMs?: number;
}

export class WriterRole {
  private current: Writer;
  private role: RoleStatus;
  private joinsSeen: number;
  private closed = false;

  constructor(private readonly options: WriterRoleOptions) {
    this.current = options.first;
    this.joinsSeen = options.joinsAtStart;
    this.role = { role: this.roleNow(), since: options.clock.now() };
    options.metrics.instanceWriter.set(this.role.role === 'writer' ? 1 : 0);
  }

  /** Writer or standby, and since when. */
  status(): RoleStatus {
    const role = this.roleNow();
    if (role !== this.role.role) this.role = { role, since: this.options.clock.now() };
    return this.role;
  }

  /** The current writer's locations (a standby shows where its last writer left them). */
  locations(): LocationStatus[] {
    return this.current.status();
  }

  /** Why each of the current writer's locations waits. */
  waitReasons(): Array<{ locationUid: string; reason: WaitReason }> {
    return this.current.waitReasons();
  }

  /**
   * A nudge reaches the current writer's scheduler; a standby schedules nothing ('unknown': the writing instance
   * has the location, and the API's delivery to it, or its reconciliation poll, publishes the change).
   */
  nudge(locationUid: string): NudgeOutcome {
    return this.roleNow() === 'writer' ? this.current.nudge(locationUid) : 'unknown';
  }

  async run(signal: AbortSignal): Promise<void> {
    const { failures, logger } = this.options;
    for (;;) {
      await this.current.run(AbortSignal.any([signal, failures.signal]));
      const ended = failures.error;
      if (ended === null) return; // stopped, or every location stopped for good
      if (ended.code !== FENCED_BY_NEWER_INSTANCE) throw ended;
      this.setRole('standby');
      if (signal.aborted) return;
      await this.current.close();
      if (this.options.group === null) {
        logger.warn(
          { code: ended.code },
          'fenced by a newer instance with the same connector.name: standing by (not ready) until stopped',
        );
        await aborted(signal);
        return;
      }
      logger.warn(
        { code: ended.code },
        'standing by: a newer instance with the same connector.name writes; taking over once no newer instance is a member of the instances group',
      );
      if (!(await this.takeOver(this.options.group, signal))) return;
    }
  }

  /** Closes the current writer (shutdown); a writer a takeover opens after this is closed at once. */
  close(): Promise<void> {
    this.closed = true;
    return this.current.close();
  }

  /**
   * Stands by until the group says no newer instance is a member, then opens the writer again. Resolves true
   * once a writer runs, false when `signal` aborted first; rejects with a fatal error.
   */
  private async takeOver(group: InstancesGroupWatch, signal: AbortSignal): Promise<boolean> {
    const { failures, logger } = this.options;
    for (;;) {
      const stop = AbortSignal.any([signal, failures.stopped]);
      if (!(await this.nextChange(group, stop))) return this.stoppedWith(failures.error, signal);
      this.joinsSeen = group.joins;
      let newest = false;
      try {
        newest = await group.newest(TAKEOVER_INITIALISATION);
        if (!newest)
          logger.info(
            { joins: this.joinsSeen },
            'standing by: a newer instance is a member of the instances group',
          );
      } catch (error) {
        logger.warn({ err: error }, 'standing by: cannot tell yet whether a newer instance is a member');
      }
      if (stop.aborted) return this.stoppedWith(failures.error, signal);
      if (!newest) continue;
      logger.info({ joins: this.joinsSeen }, 'taking over: no newer instance in the group');
      failures.tookOver();
      try {
        this.current = await this.options.open();
      } catch (error) {
        if (failures.stopped.aborted) throw failures.error ?? error;
        if (!standsByAfter(error)) throw error;
        failures.takeoverFailed();
        logger.warn({ err: error }, 'taking over failed holding nothing: standing by again');
        continue;
      }
      if (this.closed) {
        await this.current.close();
        return false;
      }
      this.setRole('writer');
      logger.info('took over: this instance writes');
      return true;
    }
  }

  /**
   * Waits for a rebalance after the last one seen, or the safety re-check; false when `stop` aborted first.
   */
  private async nextChange(group: InstancesGroupWatch, stop: AbortSignal): Promise<boolean> {
    if (stop.aborted) return false;
    const waiting = new AbortController();
    const both = AbortSignal.any([stop, waiting.signal]);
    const recheckMs = this.options.recheckMs ?? STANDBY_RECHECK_MS;
    try {
      await Promise.race([group.rejoined(this.joinsSeen, both), this.options.clock.sleep(recheckMs, both)]);
    } catch {
      // aborted: `stop` says why below
    } finally {
      waiting.abort();
    }
    return !stop.aborted;
  }

  private stoppedWith(error: FatalError | null, signal: AbortSignal): false {
    if (!signal.aborted && error !== null && error.code !== FENCED_BY_NEWER_INSTANCE) throw error;
    return false;
  }

  /** A writer until its writer ended (the stand-down is reported before the scheduler has stopped). */
  private roleNow(): Role {
    return this.options.failures.error === null ? 'writer' : 'standby';
  }

  private setRole(role: Role): void {
    if (this.role.role !== role) this.role = { role, since: this.options.clock.now() };
    this.options.metrics.instanceWriter.set(role === 'writer' ? 1 : 0);
  }
}

/** A takeover's failure after which the instance stands by again: a stand-down, or retriable (Kafka). */
function standsByAfter(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, disposition } = error as { code?: unknown; disposition?: unknown };
  return code === FENCED_BY_NEWER_INSTANCE || disposition === 'retriable';
}

function aborted(signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}
