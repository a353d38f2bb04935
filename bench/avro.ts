/**
 * Avro codec throughput: how fast Call records become calls-topic values (Avro + Confluent framing),
 * and how fast whole pages become Kafka messages (values, keys, offset JSON), on one core, no I/O.
 * The registry is replaced by a stand-in that returns a fixed schema id (the codec only talks to it
 * at start), so the figures are pure CPU.
 *
 * Knobs (env): BENCH_AVRO_SECONDS (default 3 per scenario).
 */
import { CallCodec, type SchemaRegistryClient } from '../src/kafka/avro/call-codec.js';
import { pageMessages } from '../src/kafka/records/page-messages.js';
import type { Call } from '../src/sync/model.js';
import type { BenchModule, BenchResult } from './types.js';

const registry: SchemaRegistryClient = {
  getRegistryIdBySchema: async () => 1,
  register: async () => ({ id: 1 }),
};

function calls(count: number): Call[] {
  return Array.from({ length: count }, (_, i) => ({
    uid: `c0ffee00-0000-4000-8000-${i.toString(16).padStart(12, '0')}`,
    locationUid: '00000000-0000-4000-8000-000000000001',
    updatedAt: `2024-05-01T10:${String(i % 60).padStart(2, '0')}:00.${String(i % 1_000_000).padStart(6, '0')}Z`,
    locationPhoneNumber: '+15550100',
    customerPhoneNumber: i % 3 === 0 ? null : '+15550199',
    startedAt: '2024-05-01T09:58:00Z',
    endedAt: '2024-05-01T09:59:30.5Z',
    isPrivate: i % 3 === 0,
    conversationUid: i % 2 === 0 ? `conv-${i}` : null,
    enriched: true,
    customerPhoneNumberRedacted: i % 3 === 0,
  }));
}

/** Runs `step` until `seconds` have passed; returns iterations per second. */
function measure(seconds: number, step: () => void): { perSecond: number; iterations: number } {
  for (let i = 0; i < 1000; i += 1) step(); // warm-up: let V8 optimise the hot path
  const end = performance.now() + seconds * 1000;
  let iterations = 0;
  const start = performance.now();
  while (performance.now() < end) {
    for (let i = 0; i < 100; i += 1) step();
    iterations += 100;
  }
  return { perSecond: iterations / ((performance.now() - start) / 1000), iterations };
}

export const avroBench: BenchModule = {
  name: 'avro',
  async run(): Promise<BenchResult> {
    const seconds = Number(process.env.BENCH_AVRO_SECONDS ?? 3);
    const codec = await CallCodec.create({
      registry,
      topic: 'calls',
      keyFormat: 'string',
      connectorName: 'bench',
    });
    const sample = calls(10_000);

    let i = 0;
    let bytes = 0;
    const encode = measure(seconds, () => {
      bytes += codec.encodeValue(sample[i++ % sample.length] as Call).length;
    });
    const json = measure(seconds, () => {
      JSON.stringify(sample[i++ % sample.length]);
    });
    const page = sample.slice(0, 100);
    const offset = {
      since: null,
      cursor: 'cursor',
      watermark: page[99]?.updatedAt ?? null,
      boundary: [page[99]?.uid ?? ''],
    };
    const pages = measure(seconds, () => {
      pageMessages(
        { locationUid: '00000000-0000-4000-8000-000000000001', calls: page, deadLetters: [], offset },
        codec,
        'bench',
        new Date(),
      );
    });

    const averageBytes = bytes / (encode.iterations + 1000);
    return {
      name: 'avro',
      figures: [
        { label: 'Call -> Avro value (Confluent framed)', value: encode.perSecond, unit: 'records/s' },
        { label: 'average encoded value size', value: averageBytes, unit: 'bytes' },
        {
          label: 'Avro encode throughput',
          value: (encode.perSecond * averageBytes) / 2 ** 20,
          unit: 'MiB/s',
        },
        { label: 'JSON.stringify of the same Call (baseline)', value: json.perSecond, unit: 'records/s' },
        {
          label: 'page of 100 calls -> Kafka messages (values, keys, offset)',
          value: pages.perSecond,
          unit: 'pages/s',
        },
      ],
      notes: [
        `${seconds} s per scenario on one core, after 1,000 warm-up iterations; 10,000 distinct calls cycled.`,
        'Calls carry microsecond updatedAt values (parsed exactly, not through Date); a third are private (customer number null).',
      ],
    };
  },
};
