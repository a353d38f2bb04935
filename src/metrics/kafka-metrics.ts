/**
 * The Kafka sinks' metrics: transactions and their commits, producers rebuilt, pages written again, standing by,
 * dead letters and heartbeats.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export function kafkaMetrics(registry: Registry) {
  const registers = [registry];
  return {
    transactions: new Counter({
      name: 'calls_connector_kafka_transactions_total',
      help: 'Kafka transactions, by result (commit, abort).',
      labelNames: ['result'] as const,
      registers,
    }),
    transactionCommitDuration: new Histogram({
      name: 'calls_connector_kafka_transaction_commit_duration_seconds',
      help: 'Time one Kafka transaction commit took (a group of up to maxPagesPerTransaction pages; the commit call only, records already sent).',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    producerRecreated: new Counter({
      name: 'calls_connector_kafka_producer_recreated_total',
      help: 'Producers discarded after a fenced or stuck transaction, by error code; a new one is built only when the sink may initialise its transactional id again (otherwise it stands by).',
      labelNames: ['code'] as const,
      registers,
    }),
    pageRewrites: new Counter({
      name: 'calls_connector_kafka_page_rewrites_total',
      help: 'Committed pages written again in part: a commit of unknown outcome whose calls are visible while Kafka lost part of it since (an operator aborted a hanging transaction): its offset record, and its records on the aborted partitions, go again. Each is a page not published twice.',
      registers,
    }),
    hangingTransactionsHealed: new Counter({
      name: 'calls_connector_kafka_hanging_transactions_healed_total',
      help: "Partitions where the sink ended a hanging transaction of its own: its commit's records left without markers by Kafka (KAFKA-20734), ended with an abort marker of its own producer id; what that took of a committed page is written again (calls_connector_kafka_page_rewrites_total).",
      registers,
    }),
    standby: new Gauge({
      name: 'calls_connector_standby',
      help: '1 while this instance stands by because a newer instance with the same connector.name took over its transactional id (it writes nothing); 0 otherwise.',
      registers,
    }),
    deadLetters: new Counter({
      name: 'calls_connector_dead_letters_total',
      help: 'Items written to the dead-letter topic, by error code.',
      labelNames: ['code'] as const,
      registers,
    }),
    heartbeats: new Counter({
      name: 'calls_connector_heartbeats_total',
      help: 'Heartbeat records written to the heartbeat topic (heartbeat.intervalMs), by location.',
      labelNames: ['location'] as const,
      registers,
    }),
  };
}
