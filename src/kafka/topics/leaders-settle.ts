/**
 * Kafka answers NOT_LEADER_FOR_PARTITION, LEADER_NOT_AVAILABLE or UNKNOWN_TOPIC_OR_PARTITION for a moment
 * after a topic is created (its partitions' leaders are still being elected: the offsets topic has many) or
 * while a broker restarts. Several kafkajs admin calls give up at once on some of these (fetchTopicOffsets
 * retries only the unknown topic). `whileLeadersSettle` tries such a call again, a few times over about 10 s on
 * the clock; any other error, or the last attempt's, passes on as it is.
 */
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

function leaderMoving(error: unknown): boolean {
  const type = (error as { type?: unknown } | null)?.type;
  return typeof type === 'string' && LEADER_MOVING.has(type);
}

export function whileLeadersSettle<T>(attempt: () => Promise<T>, clock: Clock = systemClock): Promise<T> {
  return retrying(SETTLING, { clock, retriable: leaderMoving }, attempt);
}
