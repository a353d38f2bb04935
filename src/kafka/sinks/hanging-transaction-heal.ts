/**
 * Our own hanging transactions (hanging-transaction-heal-rule.ts holds the rule): remembers where the sink's last failed
 * writes began, and ends a transaction of ours that Kafka left without markers (KAFKA-20734) with an abort marker of
 * our producer id. Owned by the Settler, which calls rememberWrite for each failed write and heal when a read-back
 * meets a transaction open past the load timeout.
 */
import { RetriableError } from '../../errors/index.js';
import type { Logger } from '../../logging/logger.js';
import type { ConnectorMetrics } from '../../metrics/metrics.js';
import { describeKafkaError } from '../client/kafka-errors.js';
import type { SinkTopics } from '../records/page-messages.js';
import type { RecordPosition } from './commit-witnesses.js';
import {
  abortThrough,
  healKey,
  partitionsToHeal,
  stuckPartitionsOf,
  TRANSACTION_HEALED,
} from './hanging-transaction-heal-rule.js';
import type { ProducerLifecycle } from './producer-lifecycle.js';
import type { TransactionalProducer } from './transactional-producer.js';

/** Failed writes remembered for the heal: a page refused after a failed send may read back a few writes later. */
const REMEMBERED_WRITES = 16;

export interface OwnTransactionHealerOptions {
  producers: Pick<ProducerLifecycle<TransactionalProducer>, 'acquire' | 'discard' | 'generation'>;
  topics: Pick<SinkTopics, 'offsets'>;
  metrics: Pick<ConnectorMetrics, 'hangingTransactionsHealed'>;
  logger: Logger;
}

export class OwnTransactionHealer {
  /** Where the last failed writes that sent records began (hanging-transaction-heal-rule.ts), newest last. */
  private readonly failedWrites: Array<readonly RecordPosition[]> = [];

  constructor(private readonly options: OwnTransactionHealerOptions) {}

  /** Remembers where a failed write's records began on each partition (the produce answers' offsets). */
  rememberWrite(firsts: readonly RecordPosition[]): void {
    this.failedWrites.push(firsts);
    if (this.failedWrites.length > REMEMBERED_WRITES) this.failedWrites.shift();
  }

  /**
   * A read-back stopped by a transaction open for longer than the load timeout (KAFKA_TRANSACTION_OPEN): when it
   * is our own commit's, hanging on partitions Kafka left without markers, ends it with an abort marker of our
   * producer id (hanging-transaction-heal-rule.ts), once per partition and offset (`healed`). The next read-back then
   * finds what the abort took and writes it again. Another producer's is left as it is. Never throws: a failed
   * heal is logged, its producer discarded (its sequence numbers may be spent), and tried at the next read-back.
   */
  async heal(error: unknown, healed: Set<string>): Promise<void> {
    if (!(error instanceof RetriableError) || error.code !== 'KAFKA_TRANSACTION_OPEN') return;
    if (this.failedWrites.length === 0) return;
    const stuck = stuckPartitionsOf(error.details);
    if (stuck === undefined) return;
    const own = { writes: this.failedWrites, offsetsTopic: this.options.topics.offsets };
    const heal = partitionsToHeal(stuck, own, healed);
    const log = this.options.logger;
    if (heal.length === 0) {
      log.warn(
        { topic: stuck.topic, partitions: stuck.partitions, stableOffsets: stuck.stableOffsets },
        "a transaction open on these partitions is not this sink's failed commit: left to its timeout or the operator",
      );
      return;
    }
    for (const p of heal) healed.add(healKey(p));
    const { producers } = this.options;
    let producer: TransactionalProducer | undefined;
    try {
      producer = await producers.acquire();
      await abortThrough(producer, heal);
    } catch (healError) {
      log.warn(
        { err: describeKafkaError(healError), partitions: heal },
        'ending our own hanging transaction failed; the next read-back tries again',
      );
      for (const p of heal) healed.delete(healKey(p));
      if (producer !== undefined) await producers.discard('KAFKA_TRANSACTION_HEAL_FAILED', producer);
      return;
    }
    this.options.metrics.hangingTransactionsHealed.inc(heal.length);
    log.warn(
      { code: TRANSACTION_HEALED, partitions: heal.map(healKey), producerGeneration: producers.generation },
      "our failed write's transaction hung on partitions Kafka left without markers (KAFKA-20734): wrote an abort marker of our own producer id there, which ends it; the read-back writes again what it took",
    );
  }
}
