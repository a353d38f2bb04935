/**
 * Kafka answers NOT_LEADER_FOR_PARTITION, LEADER_NOT_AVAILABLE or UNKNOWN_TOPIC_OR_PARTITION for a moment
 * after a topic is created (its partitions' leaders are still being elected: the offsets topic has many) or
 * while a broker restarts. Several kafkajs admin calls give up at once on some of these (fetchTopicOffsets
 * retries only the unknown topic). `whileLeadersSettle` tries such a call again, a few times over about 10 s on
 * the clock; any other error, or the last attempt's, passes on as it is.
 */
import { systemClock, type Clock } from '../time/clock.js';

const LEADER_MOVING = new Set([
  'NOT_LEADER_FOR_PARTITION',
  'LEADER_NOT_AVAILABLE',
  'UNKNOWN_TOPIC_OR_PARTITION',
]);
const ATTEMPTS = 8;

function leaderMoving(error: unknown): boolean {
  const type = (error as { type?: unknown } | null)?.type;
  return typeof type === 'string' && LEADER_MOVING.has(type);
}

export async function whileLeadersSettle<T>(
  attempt: () => Promise<T>,
  clock: Clock = systemClock,
): Promise<T> {
  for (let tried = 1; ; tried++) {
    try {
      return await attempt();
    } catch (error) {
      if (tried >= ATTEMPTS || !leaderMoving(error)) throw error;
    }
    await clock.sleep(Math.min(2_000, 100 * 2 ** tried));
  }
}
