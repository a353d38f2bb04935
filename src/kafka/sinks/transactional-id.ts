/**
 * The transactional ids of the exactly-once sinks, the one place they are named. Kafka fences by this id: two
 * producers of one id cannot both write, and initialising one aborts what the other left open. So single mode
 * has one id per connector name (a second instance of the name fences the first), and distributed mode one per
 * partition of the offsets topic (a partition's new owner fences its previous one, and no one else).
 */

/** The transactional id of a connector in single mode: one per connector name. */
export function transactionalIdFor(connectorName: string): string {
  return `calls-connector.${connectorName}`;
}

/** The transactional id of one partition's producer in distributed mode. */
export function partitionTransactionalId(connectorName: string, partition: number): string {
  return `${transactionalIdFor(connectorName)}-p${partition}`;
}
