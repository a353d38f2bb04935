/**
 * Reads the calls topic written by calls-connector and prints one JSON line per call version.
 *
 * - read_committed: the connector writes each page in a Kafka transaction; a reader that also saw
 *   aborted or still-open transactions could print calls that were never committed (and print them twice
 *   once the page is written again).
 * - Values are Avro in the Confluent wire format; the registry client fetches the writer schema by the id
 *   each value carries, so new optional fields never break this reader.
 * - The key is the call's uid: a call is published again each time it changes; keep the latest per uid.
 * - A null value is a tombstone (kafka.tombstoneGoneCalls): the call is gone, forget it.
 *
 * Run: `node consumer.ts` (Node >= 22.18 runs TypeScript as is). Settings come from the environment; see
 * README.md.
 */
// kafkajs 2.2.4 is unmaintained; the connector's two fixes for it (README.md), each a file without
// dependencies: its read_committed filter can deliver records of aborted transactions when a fetch starts
// inside aborted transactions of several producers (distributed mode writes with one producer per offsets
// partition), so that fix is installed first, before kafkajs loads; and an idle connection wakes the process
// every millisecond (TimeoutNegativeWarning on Node >= 23).
import { readCommittedFixInstalled } from '../../src/kafka/client/kafkajs-read-committed-fix.ts';
import { applyKafkajsIdleTimerFix } from '../../src/kafka/client/kafkajs-idle-timer-fix.ts';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { Kafka, logLevel, type SASLOptions } from 'kafkajs';

/** The fields this example prints; the record has more (schemas/call.avsc in the connector's repository). */
interface Call {
  uid: string;
  locationUid: string;
  /** Microseconds since the epoch, UTC (Avro timestamp-micros). */
  updatedAt: number;
  updatedAtIso: string;
  customerPhoneNumber: string | null;
  customerPhoneNumberRedacted: boolean;
  /** Microseconds since the epoch, UTC; null when the connector could not enrich the call. */
  startedAt: number | null;
  isPrivate: boolean | null;
  enriched: boolean;
}

applyKafkajsIdleTimerFix();
if (!readCommittedFixInstalled())
  throw new Error('the kafkajs read_committed fix did not install (kafkajs changed?)');

const env = (name: string, fallback?: string): string => {
  const value = process.env[name] ?? fallback;
  if (value === undefined || value === '') throw new Error(`set ${name} (see README.md)`);
  return value;
};

function sasl(): SASLOptions | undefined {
  const username = process.env.KAFKA_SASL_USERNAME;
  if (username === undefined) return undefined;
  const password = env('KAFKA_SASL_PASSWORD');
  const mechanism = process.env.KAFKA_SASL_MECHANISM ?? 'plain';
  if (mechanism === 'plain') return { mechanism, username, password };
  if (mechanism === 'scram-sha-256' || mechanism === 'scram-sha-512')
    return { mechanism, username, password };
  throw new Error(`KAFKA_SASL_MECHANISM must be plain, scram-sha-256 or scram-sha-512, not ${mechanism}`);
}

const registryAuth = process.env.SCHEMA_REGISTRY_BASIC_AUTH; // "user:password"
const registry = new SchemaRegistry({
  host: env('SCHEMA_REGISTRY_URL'),
  ...(registryAuth !== undefined && {
    auth: {
      username: registryAuth.slice(0, registryAuth.indexOf(':')),
      password: registryAuth.slice(registryAuth.indexOf(':') + 1),
    },
  }),
});
const saslOptions = sasl();
const kafka = new Kafka({
  clientId: 'calls-example-typescript',
  brokers: env('KAFKA_BROKERS').split(','),
  ssl: process.env.KAFKA_SSL === 'true' || saslOptions !== undefined,
  ...(saslOptions !== undefined && { sasl: saslOptions }),
  logLevel: logLevel.WARN,
});
const consumer = kafka.consumer({
  groupId: env('GROUP_ID', 'calls-example-typescript'),
  // Only committed transactions: never a call from a page the connector aborted and wrote again.
  readUncommitted: false,
});

const micros = (value: number | null) => (value === null ? null : new Date(value / 1000).toISOString());

await consumer.connect();
// A new group starts at the beginning of the topic (the whole history); a known group where it left off.
await consumer.subscribe({ topic: env('CALLS_TOPIC', 'calls'), fromBeginning: true });
await consumer.run({
  eachMessage: async ({ partition, message }) => {
    const uid = message.key?.toString('utf8') ?? '';
    if (message.value === null) {
      process.stdout.write(`${JSON.stringify({ uid, deleted: true, partition, offset: message.offset })}\n`);
      return;
    }
    const call = (await registry.decode(message.value)) as Call;
    const line = {
      uid: call.uid,
      locationUid: call.locationUid,
      updatedAtIso: call.updatedAtIso,
      startedAt: micros(call.startedAt),
      isPrivate: call.isPrivate,
      enriched: call.enriched,
      customerPhoneNumber: call.customerPhoneNumber,
      partition,
      offset: message.offset,
    };
    process.stdout.write(`${JSON.stringify(line)}\n`);
  },
});

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    consumer.disconnect().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}
