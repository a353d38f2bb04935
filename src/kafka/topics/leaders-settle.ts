/**
 * Kafka answers NOT_LEADER_FOR_PARTITION, LEADER_NOT_AVAILABLE or UNKNOWN_TOPIC_OR_PARTITION for a moment
 * after a topic is created (its partitions' leaders are still being elected: the offsets topic has many) or
 * while a broker restarts. Several kafkajs admin calls give up at once on some of these (fetchTopicOffsets
 * retries only the unknown topic). `whileLeadersSettle` tries such a call again, a few times over about 10 s on
 * the clock; any other error, or the last attempt's, passes on as it is. `whenTopicsLed` waits the same way, longer,
 * for topics just created to show in the broker's metadata with their leaders.
 */
import type { Admin } from 'kafkajs';
import { retrying, type BackoffPolicy } from '../../time/backoff.js';
import { systemClock, type Clock } from '../../time/clock.js';

const LEADER_MOVING = new Set([
  'NOT_LEADER_FOR_PARTITION',
  'LEADER_NOT_AVAILABLE',
  'UNKNOWN_TOPIC_OR_PARTITION',
]);
/** 200 ms doubling to 2 s, no jitter: 8 attempts over about 10 s (time/backoff.ts). */
const SETTLING: BackoffPolicy = Object.freeze({
  maxAttempts: 8,
  initialDelayMs: 200,
  maxDelayMs: 2_000,
  multiplier: 2,
  jitter: 0,
});

/**
 * For a creation to reach the broker's metadata: as SETTLING, for about 30 s. A broker still applying a burst of
 * other topics' creations and deletions answered UNKNOWN_TOPIC_OR_PARTITION for up to 12.7 s after CreateTopics
 * (a reproduction on a loaded 2-core machine), longer than SETTLING waits.
 */
const CREATION_SETTLING: BackoffPolicy = Object.freeze({ ...SETTLING, maxAttempts: 18 });

function leaderMoving(error: unknown): boolean {
  const type = (error as { type?: unknown } | null)?.type;
  return typeof type === 'string' && LEADER_MOVING.has(type);
}

export function whileLeadersSettle<T>(attempt: () => Promise<T>, clock: Clock = systemClock): Promise<T> {
  return retrying(SETTLING, { clock, retriable: leaderMoving }, attempt);
}

/**
 * Resolves once every partition of `topics` has a leader in the broker's metadata; for right after CreateTopics,
 * in place of kafkajs's `waitForLeaders`. That waits out LEADER_NOT_AVAILABLE only, yet a KRaft broker answers
 * the topic's Metadata with UNKNOWN_TOPIC_OR_PARTITION for a moment after the creation: the controller answers
 * CreateTopics once the topic's records are committed, and the broker's metadata cache takes them in afterwards,
 * on its own thread (later still while it applies other topics' changes). kafkajs then gives up at once, and the
 * topic it just created reads as a failed creation. Metadata answers with no error only once the topic is in that
 * cache (which a transaction's AddPartitionsToTxn checks too) and each partition has a leader. Bounded (about
 * 30 s, CREATION_SETTLING); then the last error passes on.
 */
export async function whenTopicsLed(
  admin: Pick<Admin, 'fetchTopicMetadata'>,
  topics: readonly string[],
  clock: Clock = systemClock,
): Promise<void> {
  await retrying(CREATION_SETTLING, { clock, retriable: leaderMoving }, () =>
    admin.fetchTopicMetadata({ topics: [...topics] }),
  );
}
