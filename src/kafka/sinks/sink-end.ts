/**
 * How the exactly-once sink ends for good, each way told once, after which it writes nothing more and every page
 * rejects with the error:
 * - fatal (`fail`): the producer lifecycle stands down with the FatalError and `onFatal` is called, so the process
 *   stops, or stands by when a newer instance took over (KAFKA_FENCED_BY_ANOTHER_INSTANCE, `standDown`);
 * - taken over (distributed mode, `takenOver`): the partition has a new owner; the lifecycle stands down, the
 *   pages see the RetriableError KAFKA_PARTITION_TAKEN_OVER (their locations are not stopped), and `onTakenOver`
 *   is called: the instance drops that partition and takes it again only through the group.
 */
import { ConnectorError, FatalError, RetriableError } from '../../errors/index.js';
import type { Logger } from '../../logging/logger.js';
import type { Clock } from '../../time/clock.js';
import type { LifecycleProducer, ProducerLifecycle } from './producer-lifecycle.js';

export interface SinkEndOptions {
  producers: Pick<ProducerLifecycle<LifecycleProducer>, 'fail' | 'fatal'>;
  connectorName: string;
  transactionalId: string;
  /** When the transaction in flight began (epoch ms), reported with a standing down. */
  transactionStartedAt: () => number;
  onFatal?: ((error: FatalError) => void) | undefined;
  onTakenOver?: (() => void) | undefined;
  logger: Logger;
  clock: Clock;
}

export class SinkEnd {
  private takenOverError: RetriableError | undefined;

  constructor(private readonly options: SinkEndOptions) {}

  /** The error the sink writes nothing more with, once it ended. */
  get error(): ConnectorError | undefined {
    return this.takenOverError ?? this.options.producers.fatal;
  }

  /** Ends the sink with `error` unless it ended already; returns the error it ended with first. */
  fail(error: FatalError): FatalError {
    const first = this.options.producers.fail(error);
    if (first === error) {
      this.options.logger.error({ code: error.code }, error.message);
      this.options.onFatal?.(error);
    }
    return first;
  }

  /** Another instance may hold the transactional id (`why`): this one stands by (KAFKA_FENCED_BY_ANOTHER_INSTANCE). */
  standDown(cause: unknown, why: string): FatalError {
    const { connectorName, transactionalId } = this.options;
    return this.fail(
      new FatalError(
        'KAFKA_FENCED_BY_ANOTHER_INSTANCE',
        `another instance with connector.name "${connectorName}" (transactional id ${transactionalId}) ` +
          `may hold the transactional id (${why}): the newest instance writes; this one stands by, and in single mode takes ` +
          `over once no newer instance is a member of the instances group. Stop it if it should not stand by; to run both, ` +
          `give them different connector names.`,
        {
          cause,
          details: { transactionOpenMs: this.options.clock.now() - this.options.transactionStartedAt() },
        },
      ),
    );
  }

  /** Distributed mode: the partition has a new owner; returns the error the sink ended with. */
  takenOver(cause: unknown): ConnectorError {
    const ended = this.error;
    if (ended !== undefined) return ended;
    const message =
      `another instance took over transactional id ${this.options.transactionalId}: its partition has a new owner, ` +
      `which writes its locations from now on; nothing of this transaction is visible`;
    const error = new RetriableError('KAFKA_PARTITION_TAKEN_OVER', message, { cause });
    this.takenOverError = error;
    // The lifecycle stands down for good (no producer is built again); the pages see the retriable error.
    this.options.producers.fail(new FatalError('KAFKA_PARTITION_TAKEN_OVER', message, { cause }));
    this.options.logger.warn(
      { code: 'KAFKA_PARTITION_TAKEN_OVER' },
      'fenced: the partition was taken over; writing nothing more',
    );
    this.options.onTakenOver?.();
    return error;
  }
}
