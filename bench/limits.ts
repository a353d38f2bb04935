/**
 * The limits side by side, in one run: the sandbox's raw capacity for the connector's exact request mix
 * (listing pages of 100 walked by cursor per location, plus one single-call GET per listed call, with the
 * connector's concurrency, a tight undici client and no Kafka), Kafka's raw capacity for pre-encoded records
 * of the same size (transactional with one transaction per page of 100, and idempotent without), then the
 * connector's backfill in four modes as a ratio to the lower of the two limits that bind it, and the naive
 * loop users write (one location, one page, one GET, one awaited send at a time). Each figure is the median
 * of REPETITIONS runs; ratios are taken per repetition, so both sides saw the same conditions.
 *
 * Knobs (env): BENCH_LIMITS_LOCATIONS (10), BENCH_LIMITS_CALLS (1000 per location), BENCH_NAIVE_RECORDS (600).
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel, type Message, type Producer } from 'kafkajs';
import { Agent, request } from 'undici';
import { applyKafkajsIdleTimerFix } from '../src/kafka/client/kafkajs-idle-timer-fix.js';
import { whenTopicsLed } from '../src/kafka/topics/leaders-settle.js';
import { provideStack } from '../tools/devstack/stack-provider.js';
import { backfill, startSandboxWorker, type Mode } from './connector.js';
import type { WorkerReady } from './sandbox-worker.js';
import { atLeast, envInt, ratios, REPETITIONS, Samples } from './stats.js';
import type { BenchModule, BenchResult } from './types.js';

/** The knobs, read when the module runs (run.ts --quick sets them after the imports). */
const knobs = {
  get locations() {
    return envInt('BENCH_LIMITS_LOCATIONS', 10);
  },
  get calls() {
    return envInt('BENCH_LIMITS_CALLS', 1_000);
  },
  get naiveRecords() {
    return envInt('BENCH_NAIVE_RECORDS', 600);
  },
};
/** The connector's defaults in bench/connector.ts: all locations in flight, 32 GETs per page in flight. */
const ENRICH_CONCURRENCY = 32;
const PAGE = 100;

/**
 * Not a limit of the definition: what Kafka takes transactionally when pages are grouped as the
 * connector groups them (the pages of all locations queued during a transaction go in the next one).
 */
const GROUPED_TRANSACTIONS =
  'Kafka, for reference: transactional, 1 transaction for one page of every location';

const MODES: Mode[] = [
  { label: 'exactly-once, enriched', exactlyOnce: true, enrich: true },
  { label: 'exactly-once, not enriched', exactlyOnce: true, enrich: false },
  { label: 'at-least-once, enriched', exactlyOnce: false, enrich: true },
  { label: 'at-least-once, not enriched', exactlyOnce: false, enrich: false },
];

interface ListedPage {
  data: { uid: string }[];
  metadata: { nextCursor: string | null };
}

async function getJson(agent: Agent, url: string, token: string): Promise<unknown> {
  const res = await request(url, { dispatcher: agent, headers: { authorization: `Bearer ${token}` } });
  if (res.statusCode !== 200) {
    await res.body.dump();
    throw new Error(`sandbox answered ${res.statusCode} to ${url}`);
  }
  return res.body.json();
}

async function inBatches<T>(items: readonly T[], concurrency: number, step: (item: T) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) await step(items[next++] as T);
    }),
  );
}

/**
 * The connector's request mix with nothing else: every location walked at once, page by page, each page's
 * calls fetched one GET each with ENRICH_CONCURRENCY in flight. Returns calls listed per second and the
 * JSON size of one listed call.
 */
async function sandboxMix(
  sandbox: WorkerReady,
  enrich: boolean,
): Promise<{ perSecond: number; size: number }> {
  const agent = new Agent({
    connect: { ca: sandbox.caCertPem ?? undefined },
    connections: 64,
    keepAliveTimeout: 10_000,
  });
  let listed = 0;
  let size = 0;
  const t0 = performance.now();
  await Promise.all(
    sandbox.locations.map(async (location) => {
      let query = `locationUid=${location}&limit=${PAGE}&order=asc`;
      for (;;) {
        const page = (await getJson(
          agent,
          `${sandbox.baseUrl}/v4/calls?${query}`,
          sandbox.accessToken,
        )) as ListedPage;
        listed += page.data.length;
        if (size === 0 && page.data[0] !== undefined) size = JSON.stringify(page.data[0]).length;
        if (enrich)
          await inBatches(page.data, ENRICH_CONCURRENCY, async (item) => {
            await getJson(agent, `${sandbox.baseUrl}/v4/calls/${item.uid}`, sandbox.accessToken);
          });
        if (page.metadata.nextCursor === null) break;
        query = `cursor=${encodeURIComponent(page.metadata.nextCursor)}&limit=${PAGE}`;
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  await agent.close();
  return { perSecond: listed / seconds, size };
}

async function createTopic(kafka: Kafka, topic: string): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  // whenTopicsLed, not waitForLeaders: kafkajs gives up on the UNKNOWN_TOPIC_OR_PARTITION of a just-created topic.
  await admin.createTopics({ topics: [{ topic, numPartitions: 6 }], waitForLeaders: false });
  await whenTopicsLed(admin, [topic]);
  await admin.disconnect();
}

function records(count: number, size: number, offset: number): Message[] {
  const value = Buffer.alloc(size, 0x61);
  return Array.from({ length: count }, (_, i) => ({ key: `call-${offset + i}`, value }));
}

/**
 * Pages of 100 pre-encoded records: transactions of `pagesPerTransaction` pages one after the other (1: the
 * issue's definition, one transaction per page), or plain idempotent sends of one page each.
 */
async function kafkaRaw(
  kafka: Kafka,
  topic: string,
  total: number,
  size: number,
  transactional: boolean,
  pagesPerTransaction = 1,
) {
  const producer: Producer = kafka.producer(
    transactional
      ? { transactionalId: `${topic}-tx`, idempotent: true, maxInFlightRequests: 1 }
      : { idempotent: true },
  );
  await producer.connect();
  const t0 = performance.now();
  if (transactional) {
    for (let sent = 0; sent < total; sent += PAGE * pagesPerTransaction) {
      const tx = await producer.transaction();
      await tx.send({
        topic,
        messages: records(Math.min(PAGE * pagesPerTransaction, total - sent), size, sent),
      });
      await tx.commit();
    }
  } else {
    const pages = Array.from({ length: Math.ceil(total / PAGE) }, (_, i) => i * PAGE);
    await inBatches(pages, knobs.locations, async (offset) => {
      await producer.send({ topic, acks: -1, messages: records(PAGE, size, offset) });
    });
  }
  const perSecond = total / ((performance.now() - t0) / 1000);
  await producer.disconnect();
  return perSecond;
}

/** The loop users write first: one location, one page, one GET per call, one awaited send per record. */
async function naive(sandbox: WorkerReady, kafka: Kafka, topic: string, size: number): Promise<number> {
  const agent = new Agent({ connect: { ca: sandbox.caCertPem ?? undefined }, connections: 1 });
  const producer = kafka.producer({ idempotent: true });
  await producer.connect();
  const value = Buffer.alloc(size, 0x61);
  let done = 0;
  const t0 = performance.now();
  let query = `locationUid=${sandbox.locations[0] ?? ''}&limit=${PAGE}&order=asc`;
  while (done < knobs.naiveRecords) {
    const page = (await getJson(
      agent,
      `${sandbox.baseUrl}/v4/calls?${query}`,
      sandbox.accessToken,
    )) as ListedPage;
    for (const item of page.data) {
      await getJson(agent, `${sandbox.baseUrl}/v4/calls/${item.uid}`, sandbox.accessToken);
      await producer.send({ topic, acks: -1, messages: [{ key: item.uid, value }] });
      if (++done >= knobs.naiveRecords) break;
    }
    if (page.metadata.nextCursor === null) break;
    query = `cursor=${encodeURIComponent(page.metadata.nextCursor)}&limit=${PAGE}`;
  }
  const perSecond = done / ((performance.now() - t0) / 1000);
  await producer.disconnect();
  await agent.close();
  return perSecond;
}

export const limitsBench: BenchModule = {
  name: 'limits',
  async run(): Promise<BenchResult> {
    const stack = await provideStack(['environment', 'jvm']);
    const sandbox = await startSandboxWorker(knobs.locations, knobs.calls);
    const dir = await mkdtemp(join(tmpdir(), 'calls-bench-'));
    const caFile = join(dir, 'sandbox-ca.pem');
    await writeFile(caFile, sandbox.ready.caCertPem ?? '');
    // The bench's own clients too: unpatched kafkajs printed TimeoutNegativeWarning (src/kafka/client/kafkajs-idle-timer-fix.ts).
    applyKafkajsIdleTimerFix();
    const kafka = new Kafka({
      clientId: 'bench-limits',
      brokers: stack.brokers,
      logLevel: logLevel.NOTHING,
    });
    const topic = `bench-raw-${Date.now().toString(36)}`;
    await createTopic(kafka, topic);
    const s = new Samples();
    let size = 0;
    let total = 0;
    try {
      for (let rep = 0; rep < REPETITIONS; rep++) {
        const mix = await sandboxMix(sandbox.ready, true);
        size = mix.size;
        s.add('sandbox limit: connector mix, enriched (page + 1 GET per call)', 'records/s', mix.perSecond);
        s.add(
          'sandbox limit: listing only (enrichment off)',
          'records/s',
          (await sandboxMix(sandbox.ready, false)).perSecond,
        );
        total = knobs.locations * knobs.calls;
        s.add(
          'Kafka limit: transactional, 1 transaction per page of 100',
          'records/s',
          await kafkaRaw(kafka, topic, total, size, true),
        );
        s.add(
          GROUPED_TRANSACTIONS,
          'records/s',
          await kafkaRaw(kafka, topic, total, size, true, knobs.locations),
        );
        s.add(
          'Kafka limit: idempotent, not transactional',
          'records/s',
          await kafkaRaw(kafka, topic, total, size, false),
        );
        for (const mode of MODES) {
          const figures = await backfill(mode, sandbox.ready, caFile, stack);
          const throughput = figures.find((f) => f.label.endsWith('backfill throughput'))?.value ?? 0;
          s.add(`connector ${mode.label}`, 'records/s', throughput);
          const cpu = figures.find((f) => f.label.endsWith('CPU time'))?.value ?? 0;
          const published = figures.find((f) => f.label.endsWith('records published'))?.value ?? 0;
          s.add(
            `connector ${mode.label}: CPU per 10,000 records (process, with sandbox worker)`,
            's',
            published > 0 ? (cpu / published) * 10_000 : 0,
          );
          const rss = figures.find((f) => f.label.endsWith('peak RSS'))?.value ?? 0;
          s.add(`connector ${mode.label}: peak RSS (process, with sandbox worker)`, 'MiB', rss);
        }
        s.add(
          'naive loop (1 location, 1 page, 1 GET, 1 awaited send at a time)',
          'records/s',
          await naive(sandbox.ready, kafka, topic, size),
        );
      }
    } finally {
      await sandbox.close();
      await stack.stop();
    }
    const lower = (enriched: boolean, transactional: boolean) =>
      s
        .values(
          enriched
            ? 'sandbox limit: connector mix, enriched (page + 1 GET per call)'
            : 'sandbox limit: listing only (enrichment off)',
        )
        .map((api, i) =>
          Math.min(
            api,
            s.values(
              transactional
                ? 'Kafka limit: transactional, 1 transaction per page of 100'
                : 'Kafka limit: idempotent, not transactional',
            )[i] ?? Infinity,
          ),
        );
    const ratioFigures = MODES.map((mode) => ({
      mode,
      values: ratios(s.values(`connector ${mode.label}`), lower(mode.enrich, mode.exactlyOnce)),
    }));
    const out = new Samples();
    for (const { mode, values } of ratioFigures)
      for (const v of values) out.add(`ratio: connector ${mode.label} / lower limit`, 'ratio', v);
    for (const mode of MODES.filter((m) => m.exactlyOnce))
      for (const v of ratios(s.values(`connector ${mode.label}`), s.values(GROUPED_TRANSACTIONS)))
        out.add(`for reference: connector ${mode.label} / grouped transactions`, 'ratio', v);
    for (const v of ratios(
      s.values('connector exactly-once, enriched'),
      s.values('naive loop (1 location, 1 page, 1 GET, 1 awaited send at a time)'),
    ))
      out.add('ratio: connector exactly-once, enriched / naive loop', 'ratio', v);
    return {
      name: 'limits side by side, connector ratio, naive baseline',
      figures: [...s.figures(), ...out.figures()],
      goals: MODES.map((mode) =>
        atLeast(
          `backfill ≥ ${mode.enrich ? '0.8' : '0.7'} of the lower limit, ${mode.label}`,
          `ratio: connector ${mode.label} / lower limit`,
          mode.enrich ? 0.8 : 0.7,
        ),
      ),
      notes: [
        `${knobs.locations} locations × ${knobs.calls} calls (${total.toLocaleString('en-US')} records) per run; sandbox in a worker thread over loopback HTTPS; Kafka from the shared stack (${stack.brokers.join(',')}).`,
        `Raw records are ${size} bytes (the JSON size of one listed call, an upper bound of its Avro size); Kafka limits produce ${total.toLocaleString('en-US')} of them to a 6-partition topic.`,
        'Lower limit: min(sandbox limit for the mode, Kafka limit for the mode) in the same repetition; enriched modes are bound by the mix with GETs, exactly-once by the transactional limit.',
        `The transactional limit is the issue's: one transaction per page, one after the other. The connector does not write that way: the pages of all locations that arrive while a transaction is in flight go together in the next one (up to kafka.maxPagesPerTransaction), so with ${knobs.locations} locations a transaction holds up to ${knobs.locations} pages and the exactly-once ratio can exceed 1. The reference row "transactional, 1 transaction for one page of every location" measures Kafka written that way (transactions of ${knobs.locations} pages); the connector's ratio to it says how close exactly-once comes to Kafka itself.`,
        'CPU per 10,000 records is of the whole bench process: the connector and the sandbox worker thread serving it (the enriched modes include the sandbox answering one GET per record). bench/profile.ts gives the connector alone.',
        `Naive loop: first ${knobs.naiveRecords} calls of one location.`,
      ],
    };
  },
};
