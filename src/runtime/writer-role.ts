/**
 * Single mode's writer and hot standby (distributed mode has no standby: distributed-writer.ts): an instance whose writer stood
 * down because a newer instance with the same connector.name holds the transactional id (the sink's
 * KAFKA_FENCED_BY_ANOTHER_INSTANCE) stays a member of the instances group `<name>-instances` and takes over as
 * soon as no newer instance is a member: single mode is active/passive. Without it a standby stood by for ever
 * once the newer instance was stopped (a blue/green switch rolled back, a rolling upgrade whose re-initialisation
 * counted an earlier version's member as newer): nobody wrote, and /healthz stayed green.
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
import {
  RoleRecord,
  runToEnd,
  type InstanceWriter,
  type RoleStatus,
  type Writer,
} from './instance-writer.js';
import { FENCED_BY_NEWER_INSTANCE, type Failures } from './steps/context.js';

/** Kafka's instances group as a standby watches it (kafka/group/instance-presence.ts implements it). */
export interface InstancesGroupWatch {
  /** Completed joins of this instance's member so far: one per rebalance of the group. */
  readonly joins: number;
  /** Resolves once `joins` exceeds `seen`; rejects when `signal` aborts. */
  rejoined(seen: number, signal: AbortSignal): Promise<void>;
  /** Whether no instance started after this one is a member (InstancePresence.newest). */
  newest(initialisation: Initialisation): Promise<boolean>;
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
  /** The instances group to watch while standing by. */
  group: InstancesGroupWatch;
  /** `group.joins` when the first writer was opened: a rebalance since then may have let it take over. */
  joinsAtStart: number;
  failures: Failures;
  metrics: Pick<ConnectorMetrics, 'instanceWriter'>;
  logger: Logger;
  clock: Clock;
  recheckMs?: number;
}

export class WriterRole implements InstanceWriter {
  private current: Writer;
  private readonly role: RoleRecord;
  private joinsSeen: number;
  private closed = false;

  constructor(private readonly options: WriterRoleOptions) {
    this.current = options.first;
    this.joinsSeen = options.joinsAtStart;
    this.role = new RoleRecord(options.failures, options.metrics, options.clock);
  }

  status(): RoleStatus {
    return this.role.status();
  }

  locations(): LocationStatus[] {
    return this.current.status();
  }

  waitReasons(): Array<{ locationUid: string; reason: WaitReason }> {
    return this.current.waitReasons();
  }

  nudge(locationUid: string): NudgeOutcome {
    return this.role.now() === 'writer' ? this.current.nudge(locationUid) : 'unknown';
  }

  async run(signal: AbortSignal): Promise<void> {
    const { failures, logger } = this.options;
    for (;;) {
      const standDown = await runToEnd(this.current, signal, failures);
      if (standDown === null) return; // stopped, or every location stopped for good
      this.role.set('standby');
      if (signal.aborted) return;
      await this.current.close();
      logger.warn(
        { code: standDown.code },
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
      this.role.set('writer');
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
}

/** A takeover's failure after which the instance stands by again: a stand-down, or retriable (Kafka). */
function standsByAfter(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, disposition } = error as { code?: unknown; disposition?: unknown };
  return code === FENCED_BY_NEWER_INSTANCE || disposition === 'retriable';
}
