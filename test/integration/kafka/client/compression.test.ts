/**
 * kafka.compression on the real broker: batches written with each codec are accepted (the broker
 * decompresses every batch it validates, with Kafka's own Java codecs), really are compressed (a batch
 * larger than the topic's max.message.bytes passes only compressed), and read back intact; the connector's
 * sinks write their batches with the configured codec.
 */
import { CompressionCodecs, CompressionTypes, type Kafka, type KafkaJSProtocolError } from 'kafkajs';
import { afterEach, describe, expect, it } from 'vitest';
import { kafkaSchema } from '../../../../src/config/schema.js';
import { createKafka } from '../../../../src/kafka/client/kafkajs-client.js';
import {
  compressionType,
  type Compression,
  type KafkajsCodec,
} from '../../../../src/kafka/client/compression.js';
import { readTopicToEnd } from '../../../../src/kafka/topics/topic-reader.js';
import { silentLogger } from '../../../../src/logging/logger.js';
import {
  createTopics,
  readCommittedAtLeast,
  commitTwoCalls,
  useKafkaSessions,
  testKafka,
  testKafkaConfig,
} from '../../../support/kafka.js';
import { rejectionOf } from '../../../support/rejection.js';
import { stackEndpoints, uniqueName } from '../../../support/stack.js';

const MAX_MESSAGE_BYTES = 64 * 1024;
/** 200 records of ~2 KB of repetitive JSON: ~400 KB, six times the topic's limit uncompressed. */
const messages = Array.from({ length: 200 }, (_, i) => ({
  key: `k${i}`,
  value: JSON.stringify({ i, text: `call ${i} `.repeat(200) }),
}));

function connectorKafka(compression: Compression): Kafka {
  const config = kafkaSchema.parse({ brokers: stackEndpoints().brokers, compression });
  return createKafka({ config, connectorName: uniqueName('compression'), logger: silentLogger() });
}

async function send(kafka: Kafka, topic: string, compression: Compression): Promise<void> {
  const producer = kafka.producer({ retry: { retries: 0 } });
  await producer.connect();
  try {
    await producer.sendBatch({
      topicMessages: [{ topic, messages }],
      acks: -1,
      compression: compressionType(compression),
    });
  } finally {
    await producer.disconnect();
  }
}

async function readValues(kafka: Kafka, topic: string): Promise<string[]> {
  const values: string[] = [];
  await readTopicToEnd(kafka, { topic, groupIdPrefix: 'compression-test', timeoutMs: 30_000 }, (r) =>
    values.push(r.value?.toString() ?? ''),
  );
  return values;
}

describe('kafka.compression', () => {
  it.each(['gzip', 'snappy', 'lz4', 'zstd'] as const)(
    '%s: a batch six times max.message.bytes is accepted compressed and reads back intact, and refused uncompressed',
    async (compression) => {
      const kafka = connectorKafka(compression);
      const topic = uniqueName(`compressed-${compression}`);
      await createTopics(testKafka(), [
        { topic, configEntries: [{ name: 'max.message.bytes', value: String(MAX_MESSAGE_BYTES) }] },
      ]);

      await send(kafka, topic, compression);
      const refused = await rejectionOf(send(kafka, topic, 'none'));

      expect((refused as KafkaJSProtocolError).type).toBe('MESSAGE_TOO_LARGE');
      expect(await readValues(kafka, topic)).toEqual(messages.map((m) => m.value));
    },
  );
});

describe('the record sinks', () => {
  const { started } = useKafkaSessions();
  connectorKafka('lz4'); // registers the codecs, as the session's client does
  const registered = CompressionCodecs[CompressionTypes.LZ4];
  afterEach(async () => {
    CompressionCodecs[CompressionTypes.LZ4] = registered;
  });

  it.each([true, false])(
    'write their batches with kafka.compression (exactlyOnce: %s), which a consumer decodes',
    async (exactlyOnce) => {
      const kafka = testKafkaConfig({ compression: 'lz4', exactlyOnce });
      // Counts the batches kafkajs codes with LZ4: the producer's, and the consumer's (the batch attributes say lz4).
      const used = { compress: 0, decompress: 0 };
      CompressionCodecs[CompressionTypes.LZ4] = () => {
        const codec = (registered as () => KafkajsCodec)();
        return {
          compress: (encoder: { buffer: Buffer }) => {
            used.compress++;
            return codec.compress(encoder);
          },
          decompress: (buffer: Buffer) => {
            used.decompress++;
            return codec.decompress(buffer);
          },
        };
      };
      const { session } = await started({ kafka });
      const calls = await commitTwoCalls(session.sink, '00000000-0000-4000-8000-000000000024');
      const compressedBeforeRead = used.compress;
      const records = await readCommittedAtLeast(testKafka(), kafka.topic, 2);

      expect(compressedBeforeRead).toBeGreaterThan(0);
      expect(used.decompress).toBeGreaterThan(0);
      expect(records.map((r) => r.key?.toString()).sort()).toEqual(calls.map((c) => c.uid).sort());
    },
  );
});
