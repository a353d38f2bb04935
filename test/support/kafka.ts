/** Kafka helpers for integration tests: a quiet client on the chosen stack, topic creation, polling. */
import { Kafka, logLevel, type ITopicConfig } from 'kafkajs';
import { stackEndpoints } from './stack.js';

/** A kafkajs client on the integration stack that logs nothing (tests assert, they do not read logs). */
export function testKafka(clientId = 'calls-connector-test'): Kafka {
  return new Kafka({ brokers: stackEndpoints().brokers, clientId, logLevel: logLevel.NOTHING });
}

/** Creates topics (waiting for their leaders), one partition unless told otherwise. */
export async function createTopics(kafka: Kafka, topics: ITopicConfig[]): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.createTopics({
      topics: topics.map((t) => ({ numPartitions: 1, replicationFactor: 1, ...t })),
      waitForLeaders: true,
    });
  } finally {
    await admin.disconnect();
  }
}

/** Polls `check` until it returns true, failing after `timeoutMs`; for conditions with no event to await. */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 30_000,
  what = 'condition',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
