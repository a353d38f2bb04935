/**
 * What every start-up step of the runtime (runtime/connector.ts) is given: the validated configuration, the
 * process's logger, metrics and clock, the one cleanup stack (lifecycle.ts) each step registers its undoing on,
 * and `failures`, where a part that fails for good while running (a fenced sink, a lost group membership) says so.
 */
import type { ConnectorConfig } from '../../config/schema.js';
import { FatalError } from '../../errors/index.js';
import type { Logger } from '../../logging/logger.js';
import type { ConnectorMetrics } from '../../metrics/metrics.js';
import type { Clock } from '../../time/clock.js';
import type { Lifecycle } from '../lifecycle.js';

export interface StartContext {
  config: ConnectorConfig;
  logger: Logger;
  metrics: ConnectorMetrics;
  clock: Clock;
  /**
   * When this start began (epoch ms, on `clock`): the instance's start stamp in the instances group, which
   * decides in single mode which running instance is the newest (kafka/group/start-stamp.ts).
   */
  startedAt: number;
  lifecycle: Lifecycle;
  failures: Failures;
  /** Aborted (SIGTERM) while start-up waits for a dependency: the wait ends with its error. */
  signal?: AbortSignal;
}

/** The sink's fatal error when a newer instance took over the transactional id (the runtime stands by). */
export const FENCED_BY_NEWER_INSTANCE = 'KAFKA_FENCED_BY_ANOTHER_INSTANCE';

/**
 * What ended the writer, and what stopped the whole connector. Steps report into it from the moment they open
 * something, so an error reported while the start is still running (a membership refused at once, a partition
 * taken over during the first assignment) is kept for the runtime, not lost.
 *
 * Two kinds of end: a stand-down (KAFKA_FENCED_BY_ANOTHER_INSTANCE: a newer instance holds the transactional id)
 * ends only the current writer, and the instance stands by; in single mode it takes over again once no newer
 * instance is a member of the instances group (runtime/writer-role.ts, `tookOver`). Any other fatal error stops
 * the connector for good, standing by or not.
 */
export class Failures {
  /** Aborted with the error that ended the current writer (a stand-down or a fatal error). */
  private writer = new AbortController();
  /** Aborted with the first fatal error that is not a stand-down: nothing resumes after it. */
  private readonly stop = new AbortController();
  /** The stand-down the instance stands by for (restored when a takeover fails). */
  private standDown: FatalError | null = null;

  constructor(
    private readonly connectorName: string,
    private readonly metrics: Pick<ConnectorMetrics, 'standby'>,
    private readonly logger: Logger,
  ) {}

  /** Aborted once the current writer ended: stood down, or a fatal error. */
  get signal(): AbortSignal {
    return this.writer.signal;
  }

  /** Aborted once a fatal error that is not a stand-down was reported: the connector stops. */
  get stopped(): AbortSignal {
    return this.stop.signal;
  }

  /** The fatal error that stops the connector, else the stand-down the current writer ended with, else null. */
  get error(): FatalError | null {
    return (
      (this.stop.signal.reason as FatalError | undefined) ??
      (this.writer.signal.reason as FatalError | undefined) ??
      null
    );
  }

  /** A sink gave up for good (fenced by a newer instance: the writer stands down; anything else: it stops). */
  fail(error: FatalError): void {
    if (error.code === FENCED_BY_NEWER_INSTANCE) {
      this.metrics.standby.set(1);
      this.logger.warn({ err: error, code: error.code }, 'a newer instance took over: no more writes');
      if (!this.writer.signal.aborted) {
        this.standDown = error;
        this.writer.abort(error);
      }
      return;
    }
    this.logger.fatal({ err: error, code: error.code }, 'connector stopping: fatal error');
    if (!this.stop.signal.aborted) this.stop.abort(error);
    if (!this.writer.signal.aborted) this.writer.abort(error);
  }

  /**
   * A standby takes over (the writer is opened again): the stand-down is over, and a later one ends the new
   * writer. Refused after a fatal error.
   */
  tookOver(): void {
    if (this.stop.signal.aborted) throw new Error('the connector stopped: it cannot take over');
    if (this.writer.signal.aborted) this.writer = new AbortController();
    this.metrics.standby.set(0);
  }

  /** The takeover failed holding nothing: the instance stands by again, for the stand-down it stood by for. */
  takeoverFailed(): void {
    if (!this.writer.signal.aborted && this.standDown !== null) this.writer.abort(this.standDown);
    this.metrics.standby.set(1);
  }

  /** The instances group refused or ended this instance's membership: it owns nothing any more. */
  membershipLost(error: Error): void {
    this.fail(
      new FatalError(
        'KAFKA_GROUP_MEMBERSHIP_LOST',
        `the instances group ${this.connectorName}-instances refused or ended this instance's membership, so it owns nothing: ${error.message}`,
        { cause: error },
      ),
    );
  }
}
