/**
 * Writes one location's offset outside the sync engine: the `offsets reset` command.
 *
 * Not transactional on purpose: a transaction under the connector's transactionalId would fence a
 * running instance, which would rebuild its producer and overwrite the reset with its next page
 * anyway. Resetting is therefore only meaningful while the connector is stopped (the command says so).
 * The write is idempotent, acks=all; read_committed readers see it at once.
 */
import { Partitioners, type Kafka } from 'kafkajs';
import type { LocationOffset } from '../../sync/model.js';
import { encodeOffsetValue, offsetKey } from './offset-codec.js';

/** Stores `offset` for the location, or a tombstone (no offset: start over) when it is null. */
export async function writeLocationOffset(
  kafka: Kafka,
  target: { topic: string; connectorName: string; locationUid: string },
  offset: LocationOffset | null,
): Promise<void> {
  const producer = kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
    createPartitioner: Partitioners.DefaultPartitioner,
  });
  await producer.connect();
  try {
    await producer.send({
      topic: target.topic,
      acks: -1,
      messages: [
        {
          key: offsetKey(target.connectorName, target.locationUid),
          value: offset === null ? null : encodeOffsetValue(offset),
        },
      ],
    });
  } finally {
    await producer.disconnect();
  }
}
