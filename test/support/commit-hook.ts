/**
 * A test's hand on the commits of every transactional producer a kafkajs client builds: `kafka.producer` is
 * wrapped so that each transaction's `commit()` goes through `commit(transaction)` (which calls the real one, or
 * not, and may throw as a lost answer would). Returns the unwrapped factory, for producers the test builds itself.
 */
import type { Kafka, Producer, ProducerConfig, Transaction } from 'kafkajs';

export function hookCommits(
  kafka: Kafka,
  commit: (transaction: Transaction) => Promise<void>,
): (config?: ProducerConfig) => Producer {
  const producer = kafka.producer.bind(kafka);
  kafka.producer = (config): Producer => {
    const real = producer(config);
    return {
      ...real,
      transaction: async () => {
        const transaction = await real.transaction();
        return { ...transaction, commit: () => commit(transaction) };
      },
    };
  };
  return producer;
}
