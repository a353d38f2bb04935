/**
 * Every sender shape end to end, no Kafka: for each shape the sandbox signs in (packages/sandbox shapes.ts), a
 * sandbox in this process sends one delivery per change to a receiver configured with that sender's ready
 * configuration (read from docs/webhooks.md), with a share of the deliveries forged, duplicated, replayed and replayed
 * under a fresh id. Figures per shape:
 * - changes nudged once / changes: every genuine delivery taken (the forged first attempt is retried, signed);
 * - deliveries taken that were not a change's first (forged, duplicated, replayed or re-identified): goal 0;
 * - the verification cost of one delivery (the signature rule alone, in microseconds, on one core).
 *
 * Knobs (env): BENCH_SHAPES_CHANGES (200 per shape), BENCH_SHAPES_FAULT_PCT (10: the rate of each fault),
 * BENCH_SHAPES_PORT (25300: the receivers' first port; a Twilio-shaped sender signs the URL, so it is fixed).
 */
import { shapeSigner, startSandbox, WEBHOOK_SHAPES, type WebhookShape } from '@calls-connector/sandbox';
import { readFileSync } from 'node:fs';
import { parseConfig } from '../src/config/load.js';
import type { WebhooksConfig } from '../src/config/schema.js';
import { ConnectorMetrics } from '../src/metrics/metrics.js';
import { locationDirectory } from '../src/webhooks/location-directory.js';
import { WebhookReceiver } from '../src/webhooks/receiver.js';
import { ReplayWindow, replayKeepMs } from '../src/webhooks/replay-window.js';
import { signatureRuleOf, verifyDelivery } from '../src/webhooks/signature/verify.js';
import { LruUidLocations } from '../src/webhooks/uid-locations.js';
import { systemClock } from '../src/time/clock.js';
import { documentedShapeOf, documentedShapes } from '../tools/docs/webhook-shapes.js';
import { envInt } from './stats.js';
import type { BenchFigure, BenchGoal, BenchModule, BenchResult } from './types.js';

const SHAPES = documentedShapes(readFileSync(new URL('../../docs/webhooks.md', import.meta.url), 'utf8'));

const MINIMAL = {
  connector: { name: 'bench' },
  api: { baseUrl: 'https://api.example.test' },
  auth: { staticToken: 't' },
  sources: [{ locations: ['6f1c2c36-9f59-4f3e-8a53-3c1f1e0c6a11'] }],
  kafka: { brokers: ['127.0.0.1:9092'] },
  schemaRegistry: { url: 'http://127.0.0.1:8081' },
};

interface ShapeRun {
  /** Faults the sandbox injected, by name. */
  injected: Record<string, number>;
  changes: number;
  nudgedOnce: number;
  extra: number;
  verifyMicros: number;
}

async function runShape(shape: WebhookShape, port: number, changes: number, rate: number): Promise<ShapeRun> {
  const sandbox = await startSandbox({
    data: { seed: 5, locations: 2, callsPerLocation: 1 },
    webhooks: {
      shape,
      retry: { initialDelayMs: 5, maxDelayMs: 50 },
      faults: {
        rates: { badSignature: rate, duplicate: rate, replay: rate, reidentify: rate },
        delayMs: 5,
      },
    },
  });
  const documented = SHAPES.get(documentedShapeOf(shape)) ?? {};
  const signature = { ...(documented['signature'] as object), publicUrl: `http://127.0.0.1:${port}` };
  const settings = parseConfig(
    { ...MINIMAL, webhooks: { ...documented, enabled: true, port, signature } },
    {},
  ).webhooks;
  const rule = signatureRuleOf(
    settings.signature,
    [sandbox.admin.webhooks.secret],
    settings.replay.waiveProtection,
  );
  const nudged = new Map<string, number>();
  const receiver = new WebhookReceiver({
    host: '127.0.0.1',
    port,
    path: '/webhooks/calls',
    bodyLimitBytes: 64 * 1024,
    rule,
    replay: new ReplayWindow({
      keepMs: replayKeepMs(settings.signature.toleranceMs, settings.replay.waiveProtection),
      maxEntries: 100_000,
    }),
    mapping: settings.payload,
    directory: locationDirectory([{ grant: 'default', locations: sandbox.locations }]),
    index: new LruUidLocations(1000),
    sink: { offer: async (n) => void nudged.set(n.uid, (nudged.get(n.uid) ?? 0) + 1) },
    metrics: new ConnectorMetrics(),
    limits: settings.limits,
    clock: systemClock,
  });
  try {
    const { url } = await receiver.start();
    sandbox.admin.webhooks.addTarget(url);
    const uids = new Set<string>();
    for (let i = 0; i < changes; i += 1)
      uids.add(
        sandbox.admin.upsertCall({ locationUid: sandbox.locations[i % sandbox.locations.length] }).uid,
      );
    await sandbox.admin.webhooks.idle();
    let nudgedOnce = 0;
    let extra = 0;
    for (const uid of uids) {
      const count = nudged.get(uid) ?? 0;
      if (count >= 1) nudgedOnce += 1;
      extra += Math.max(0, count - 1);
    }
    const { faults } = sandbox.admin.webhooks.stats();
    return {
      injected: {
        badSignature: faults.badSignature,
        duplicate: faults.duplicate,
        replay: faults.replay,
        reidentify: faults.reidentify,
      },
      changes: uids.size,
      nudgedOnce,
      extra,
      verifyMicros: await verifyCost(shape, settings, port),
    };
  } finally {
    await receiver.close();
    await sandbox.close();
  }
}

/**
 * Microseconds one verification takes (the signature rule alone), over at least half a second: a delivery the
 * shape's signer signs, verified by a rule made from the same configuration and that signer's secret.
 */
async function verifyCost(shape: WebhookShape, settings: WebhooksConfig, port: number): Promise<number> {
  const signer = shapeSigner(shape);
  const rule = signatureRuleOf(
    settings.signature,
    [signer.verificationSecret],
    settings.replay.waiveProtection,
  );
  const signed = signer.sign({
    id: 'msg_bench',
    timestampSeconds: Math.floor(Date.now() / 1000),
    body: JSON.stringify({ type: 'call.updated', data: { uid: 'c1', locationUid: 'l1' } }),
    url: `http://127.0.0.1:${port}/webhooks/calls`,
    forged: false,
  });
  const url = new URL(signed.url);
  const delivery = {
    headers: Object.fromEntries(Object.entries(signed.headers).map(([k, v]) => [k.toLowerCase(), v])),
    body: Buffer.from(signed.body),
    target: `${url.pathname}${url.search}`,
  };
  let runs = 0;
  const start = performance.now();
  while (performance.now() - start < 500) {
    const verdict = await verifyDelivery(rule, { ...delivery, nowMs: Date.now() });
    if (!verdict.ok) throw new Error(`${shape}: the bench's own delivery was refused (${verdict.detail})`);
    runs += 1;
  }
  return ((performance.now() - start) * 1000) / runs;
}

export const webhookShapesBench: BenchModule = {
  name: 'webhook-shapes',
  async run(): Promise<BenchResult> {
    const changes = envInt('BENCH_SHAPES_CHANGES', 200);
    const rate = envInt('BENCH_SHAPES_FAULT_PCT', 10) / 100;
    const firstPort = envInt('BENCH_SHAPES_PORT', 25_300);
    const figures: BenchFigure[] = [];
    const goals: BenchGoal[] = [];
    const injected: string[] = [];
    for (const [i, shape] of WEBHOOK_SHAPES.entries()) {
      const run = await runShape(shape, firstPort + i, changes, rate);
      injected.push(
        `${shape} ${Object.entries(run.injected)
          .map(([f, n]) => `${f} ${n}`)
          .join(', ')}`,
      );
      figures.push(
        { label: `${shape}: changes nudged`, value: run.nudgedOnce / run.changes, unit: 'share' },
        {
          label: `${shape}: forged, duplicated, replayed or re-identified deliveries taken`,
          value: run.extra,
          unit: 'deliveries',
        },
        { label: `${shape}: verification of one delivery`, value: run.verifyMicros, unit: 'µs' },
      );
      goals.push(
        { goal: `${shape}: every change nudged`, figure: `${shape}: changes nudged`, atLeast: 1 },
        {
          goal: `${shape}: a forged, replayed or re-identified delivery accepted: 0`,
          figure: `${shape}: forged, duplicated, replayed or re-identified deliveries taken`,
          atMost: 0,
        },
      );
    }
    return {
      name: 'webhook-shapes',
      figures,
      goals,
      notes: [
        `${changes} changes per shape, each fault (badSignature, duplicate, replay, reidentify) at ${rate * 100} % of the deliveries; sandbox and receiver in one process, over loopback HTTP`,
        `faults injected: ${injected.join('; ')}`,
      ],
    };
  },
};
