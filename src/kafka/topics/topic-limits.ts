/**
 * The record size the calls topic accepts, so that a call too large for it becomes a dead letter before
 * it is sent (ITEM_TOO_LARGE, by the codec) instead of a send the broker refuses (MESSAGE_TOO_LARGE),
 * which no retry can fix. Read once at start from the topic's `max.message.bytes`.
 */
import type { Kafka } from 'kafkajs';
import { topicMaxMessageBytes } from './topics.js';

/** Room kept under max.message.bytes for the key (a uid of at most 256 characters), headers and batch overhead. */
export const RECORD_OVERHEAD_BYTES = 2048;

/**
 * The topic's max.message.bytes (topics.ts reads it), or undefined when it cannot be read (no
 * DescribeConfigs permission, an older broker, the topic missing): the caller then keeps its own bound.
 */
export async function topicMaxMessageBytesIfKnown(kafka: Kafka, topic: string): Promise<number | undefined> {
  let admin: ReturnType<Kafka['admin']> | undefined;
  try {
    admin = kafka.admin();
    await admin.connect();
    return await topicMaxMessageBytes(admin, topic);
  } catch {
    return undefined;
  } finally {
    await admin?.disconnect().catch(() => undefined);
  }
}

/** The largest value a call record may have: under every limit known, with room for key and headers. */
export function maxCallValueBytes(limits: {
  codecDefault: number;
  maxBytesPerTransaction: number;
  topicMaxMessageBytes: number | undefined;
}): number {
  const topic =
    limits.topicMaxMessageBytes === undefined
      ? Number.POSITIVE_INFINITY
      : Math.max(1, limits.topicMaxMessageBytes - RECORD_OVERHEAD_BYTES);
  return Math.min(limits.codecDefault, limits.maxBytesPerTransaction, topic);
}
