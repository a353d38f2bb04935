/**
 * Slow connections against the webhook receiver before authentication (issue 40's last goal): 2,000
 * connections, each sending the headers and 60 KiB of a declared 64 KiB body, then holding. The receiver runs
 * in this (isolated) process with the configuration's default `webhooks.limits` and `bodyLimitBytes`; the
 * attacker in a child process (bench/webhook-flood-child.ts), so RSS growth is the receiver's. Meanwhile a
 * genuine sender from another address delivers every 100 ms, and the event loop's delay is sampled: what the
 * process would give its Kafka writes.
 *
 * Two floods, each repeated: from 20 addresses (100 connections each, under the per-address cap: the overall
 * cap binds, and genuine deliveries are refused until the slow connections are cut) and from one address (the
 * per-address cap binds, and genuine deliveries from elsewhere go on).
 *
 * Figures: the peak RSS growth over the RSS before the first flood (goal ≤ 64 MiB), the longest a connection lived
 * (goal ≤ 15 s), the connections refused and cut, the genuine deliveries accepted during the flood, and the
 * event loop delay p99. Knob (env): BENCH_FLOOD_CONNECTIONS (2000).
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { request } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { webhooksSchema } from '../src/config/sections/webhooks.js';
import { ensureNudgeTopic, NudgeTopicWriter } from '../src/kafka/nudges/nudge-topic.js';
import { ConnectorMetrics } from '../src/metrics/metrics.js';
import { systemClock } from '../src/time/clock.js';
import { locationDirectory } from '../src/webhooks/location-directory.js';
import { WebhookReceiver } from '../src/webhooks/receiver.js';
import { ReplayWindow } from '../src/webhooks/replay-window.js';
import { LruUidLocations } from '../src/webhooks/uid-locations.js';
import { provideStack } from '../tools/devstack/stack-provider.js';
import { atMost, envInt, percentile, REPETITIONS, Samples } from './stats.js';
import type { BenchModule, BenchResult } from './types.js';
import type { FloodReport } from './webhook-flood-child.js';

const LOCATION = '6f1c2c36-9f59-4f3e-8a53-3c1f1e0c6a11';
const MIB = 2 ** 20;

interface Flood {
  label: string;
  addresses: number;
}

const FLOODS: Flood[] = [
  { label: 'from 20 addresses', addresses: 20 },
  { label: 'from 1 address', addresses: 1 },
];

/** One genuine delivery from 127.0.0.250; resolves with its status (0: the connection was refused). */
function deliver(port: number, uid: string): Promise<number> {
  const body = JSON.stringify({ type: 'call.updated', data: { uid, locationUid: LOCATION } });
  return new Promise((resolve) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/webhooks/calls',
        method: 'POST',
        localAddress: '127.0.0.250',
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', () => resolve(0));
    req.end(body);
  });
}

/**
 * A nudge-topic writer on the stack named by KAFKA_BROKERS (the bench's Kafka writes from the receiver's own
 * process), or null when none is: the figure is then left out and a note says so.
 */
async function kafkaWriter(): Promise<{ writer: NudgeTopicWriter; close(): Promise<void> } | null> {
  const stack = await provideStack(['environment']).catch(() => null);
  if (stack === null) return null;
  const kafka = new Kafka({
    clientId: 'bench-webhook-flood',
    brokers: stack.brokers,
    logLevel: logLevel.NOTHING,
  });
  const topic = `bench-flood-${randomUUID()}-nudges`;
  await ensureNudgeTopic(kafka, { topic, partitions: 1, replicationFactor: 1, create: true });
  const writer = new NudgeTopicWriter(kafka, { topic, connectorName: 'bench', partitionCount: 1 });
  await writer.connect();
  return {
    writer,
    close: async () => {
      await writer.disconnect();
      const admin = kafka.admin();
      await admin.connect();
      await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
      await admin.disconnect();
    },
  };
}

/** One flood; `baseline` is the process's RSS before its first flood (memory reused by later floods counts). */
async function floodOnce(
  flood: Flood,
  connections: number,
  baseline: number,
  writer: NudgeTopicWriter | null,
  s: Samples,
): Promise<void> {
  const defaults = webhooksSchema.parse({ enabled: true });
  let taken = 0;
  const receiver = new WebhookReceiver({
    host: '127.0.0.1',
    port: 0,
    path: defaults.path,
    bodyLimitBytes: defaults.bodyLimitBytes,
    limits: defaults.limits,
    rule: { scheme: 'none' },
    replay: new ReplayWindow({ keepMs: 600_000, maxEntries: 100_000 }),
    mapping: defaults.payload,
    directory: locationDirectory([{ grant: 'default', locations: [LOCATION] }]),
    index: new LruUidLocations(1_000),
    sink: { offer: () => Promise.resolve(void (taken += 1)) },
    metrics: new ConnectorMetrics(),
    clock: systemClock,
  });
  const { port } = await receiver.start();
  globalThis.gc?.();
  const before = process.memoryUsage().rss;
  let peak = before;
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const child = fork(
    new URL('./webhook-flood-child.js', import.meta.url),
    [
      JSON.stringify({
        port,
        connections,
        addresses: flood.addresses,
        declaredBytes: defaults.bodyLimitBytes,
        sentBytes: defaults.bodyLimitBytes - 4 * 1024,
      }),
    ],
    { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] },
  );
  const reported = once(child, 'message') as Promise<[FloodReport]>;
  let flooding = true;
  const statuses: number[] = [];
  const writes: number[] = [];
  const kafkaWrites = (async () => {
    if (writer === null) return;
    for (let n = 0; flooding; n++) {
      const started = performance.now();
      await writer.write([{ location: LOCATION, uid: `write-${n}`, event: 'call.updated' }]);
      writes.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  const genuine = (async () => {
    for (let n = 0; flooding; n++) {
      statuses.push(await deliver(port, `genuine-${n}`));
      peak = Math.max(peak, process.memoryUsage().rss);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  try {
    const [report] = await reported;
    flooding = false;
    await genuine;
    await kafkaWrites;
    delay.disable();
    const longest = Math.max(...report.lifetimesMs);
    s.add(`RSS growth under the slow connections ${flood.label}`, 'MiB', (peak - before) / MIB);
    s.add(`RSS growth since the first flood began, ${flood.label}`, 'MiB', (peak - baseline) / MIB);
    s.add(`longest-lived slow connection ${flood.label}`, 's', longest / 1_000);
    s.add(`slow connections refused as they opened, ${flood.label}`, 'connections', report.refused);
    s.add(`slow connections cut with 408, ${flood.label}`, 'connections', report.cut);
    s.add(
      `genuine deliveries accepted during the flood ${flood.label}`,
      '%',
      (100 * statuses.filter((status) => status === 202).length) / Math.max(1, statuses.length),
    );
    s.add(`event loop delay p99 during the flood ${flood.label}`, 'ms', delay.percentile(99) / 1e6);
    if (writer !== null) {
      s.add(`Kafka writes completed during the flood ${flood.label}`, 'writes', writes.length);
      s.add(
        `Kafka write latency p99 during the flood ${flood.label}`,
        'ms',
        percentile(
          [...writes].sort((a, b) => a - b),
          0.99,
        ),
      );
    }
  } finally {
    flooding = false;
    child.kill();
    await receiver.close();
  }
  if (taken === 0) throw new Error('no genuine delivery was taken: the bench measured nothing');
}

export const webhookFloodBench: BenchModule = {
  name: 'webhook-flood',
  isolated: true,
  async run(): Promise<BenchResult> {
    const connections = envInt('BENCH_FLOOD_CONNECTIONS', 2_000);
    const s = new Samples();
    const kafka = await kafkaWriter();
    // The producer's first sends allocate what every later one reuses: before the baseline, not counted.
    for (let n = 0; n < 50 && kafka !== null; n++)
      await kafka.writer.write([{ location: LOCATION, uid: `warm-up-${n}`, event: 'call.updated' }]);
    globalThis.gc?.();
    const baseline = process.memoryUsage().rss;
    try {
      for (let rep = 0; rep < REPETITIONS; rep++) {
        for (const flood of FLOODS) await floodOnce(flood, connections, baseline, kafka?.writer ?? null, s);
      }
    } finally {
      await kafka?.close();
    }
    const limits = webhooksSchema.parse({ enabled: true }).limits;
    return {
      name: `Webhook receiver under ${connections.toLocaleString('en-US')} slow connections`,
      figures: s.figures(),
      notes: [
        `Each connection sends its headers and 60 KiB of a declared 64 KiB body, then holds; the default limits: ` +
          `maxConnections ${limits.maxConnections}, maxConnectionsPerAddress ${limits.maxConnectionsPerAddress}, ` +
          `headersTimeoutMs ${limits.headersTimeoutMs}, requestTimeoutMs ${limits.requestTimeoutMs} (checked every second).`,
        'The attacker runs in a child process; RSS growth is the receiver process’s peak during a flood over its RSS just before it (after a GC); “since the first flood began” counts from before the first flood, so what earlier floods left allocated counts too.',
        kafka === null
          ? 'No Kafka (KAFKA_BROKERS unset): the Kafka writes during the flood were not measured.'
          : 'A nudge-topic writer in the receiver’s process writes one record (acks from all replicas) every 100 ms during each flood.',
        'A genuine sender on 127.0.0.250 delivers every 100 ms during the flood: while slow connections fill ' +
          'maxConnections, it is refused too (the API retries); a flood from one address leaves it served.',
      ],
      goals: FLOODS.flatMap((flood) => [
        atMost(
          '2,000 slow connections: RSS grows ≤ 64 MiB',
          `RSS growth under the slow connections ${flood.label}`,
          64,
        ),
        atMost(
          '2,000 slow connections: each cut within 15 s',
          `longest-lived slow connection ${flood.label}`,
          15,
        ),
      ]),
    };
  },
};
