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
 * The first error that stopped the whole connector. Steps report into it from the moment they open something,
 * so an error reported while the start is still running (a membership refused at once, a partition taken over
 * during the first assignment) is kept for the runtime, not lost.
 */
export class Failures {
  private readonly fatal = new AbortController();

  constructor(
    private readonly connectorName: string,
    private readonly metrics: Pick<ConnectorMetrics, 'standby'>,
    private readonly logger: Logger,
  ) {}

  /** Aborted with the FatalError once one was reported. */
  get signal(): AbortSignal {
    return this.fatal.signal;
  }

  get error(): FatalError | null {
    return (this.fatal.signal.reason as FatalError | undefined) ?? null;
  }

  /** A sink gave up for good (fenced by a newer instance: the runtime stands by; anything else: it stops). */
  fail(error: FatalError): void {
    if (error.code === FENCED_BY_NEWER_INSTANCE) {
      this.metrics.standby.set(1);
      this.logger.warn({ err: error, code: error.code }, 'a newer instance took over: no more writes');
    } else this.logger.fatal({ err: error, code: error.code }, 'connector stopping: fatal error');
    if (!this.fatal.signal.aborted) this.fatal.abort(error);
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
