/**
 * The driver's progress probe: reads a topic with kafkajs while the run settles (has every location caught
 * up?) and counts the hostile cases' dead letters. It is NOT the checker's witness (witness.ts): stock kafkajs
 * may return aborted records as committed when several transactional producers write a partition, and it stops
 * after a few quiet seconds. A wrong answer here only moves when the driver stops waiting; the checker then
 * reads everything again with the witness and judges that.
 */
import { Kafka, logLevel, type KafkaMessage } from 'kafkajs';

/**
 * Every committed message of a topic, from the beginning, with a consumer group of its own, up to the high
 * watermark read first: a partition ends when a fetched batch, its transaction markers included, reaches it (or
 * after `quietMs` without a record, should a transaction open at that watermark never end).
 */
export async function probeTopic(
  brokers: string,
  topic: string,
  each: (message: KafkaMessage, partition: number) => Promise<void> | void,
  quietMs = 6000,
): Promise<number> {
  const kafka = new Kafka({
    clientId: 'calls-chaos-checker',
    brokers: [brokers],
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  await admin.connect();
  let high: Map<number, bigint>;
  try {
    const topics = await admin.listTopics();
    if (!topics.includes(topic)) return 0;
    high = new Map((await admin.fetchTopicOffsets(topic)).map((p) => [p.partition, BigInt(p.high)] as const));
  } finally {
    await admin.disconnect();
  }
  const pending = new Set([...high].filter(([, h]) => h > 0n).map(([p]) => p));
  if (pending.size === 0) return 0;
  const consumer = kafka.consumer({
    groupId: `calls-chaos-checker-${process.pid}-${Date.now()}`,
    readUncommitted: false,
    maxBytes: 16 * 1024 * 1024,
  });
  let count = 0;
  let lastMessageAt = Date.now();
  let failure: Error | null = null;
  // A read_committed fetch never hands out a transaction's marker, the last entry of a partition written in
  // transactions: a partition is read to its end when a batch, markers included (kafkajs's lastOffset), reaches the
  // high watermark taken above. Without it every read ran until `quietMs` without a record, which a topic written
  // all the time (the offsets topic in distributed mode) reached only after minutes.
  consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
    if (BigInt(payload.lastOffset) + 1n >= (high.get(payload.partition) ?? 0n))
      pending.delete(payload.partition);
  });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ message, partition }) => {
        try {
          await each(message, partition);
        } catch (error) {
          failure ??= error instanceof Error ? error : new Error(String(error));
        }
        count++;
        lastMessageAt = Date.now();
        if (BigInt(message.offset) + 1n >= (high.get(partition) ?? 0n)) pending.delete(partition);
      },
    });
    while (pending.size > 0 && Date.now() - lastMessageAt < quietMs && failure === null)
      await new Promise((r) => setTimeout(r, 200));
  } finally {
    await consumer.disconnect();
  }
  // Set by the callback above (the compiler cannot see it): the first decoding failure, if any.
  const firstFailure = failure as Error | null;
  if (firstFailure !== null) throw firstFailure;
  return count;
}
