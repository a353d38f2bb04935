/**
 * The sandbox's call.* webhooks, end to end into the connector's receiver over HTTPS: every delivery the
 * sandbox signs verifies, and each fault it injects shows in the receiver's outcomes. `webhooks.idle()` says
 * when the sandbox has nothing left to send (retries included), so nothing here waits on time.
 */
import { startSandbox, type RunningSandbox, type WebhookOptions } from '@calls-connector/sandbox';
import { generateSelfSigned, type CertificatePair } from '@calls-connector/self-signed';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ConnectorMetrics } from '../../../src/metrics/metrics.js';
import { testMetrics } from '../../support/metrics.js';
import { locationDirectory } from '../../../src/webhooks/location-directory.js';
import type { ResolvedNudge } from '../../../src/webhooks/nudge-resolution.js';
import type { NudgeSink } from '../../../src/webhooks/nudge-sink.js';
import { WebhookReceiver } from '../../../src/webhooks/receiver.js';
import { ReplayWindow } from '../../../src/webhooks/replay-window.js';
import { keysOf } from '../../../src/webhooks/signature/verify.js';
import { LruUidLocations } from '../../../src/webhooks/uid-locations.js';
import { systemClock } from '../../../src/time/clock.js';
import { counterValue } from '../../support/counters.js';

let tls: CertificatePair;
beforeAll(async () => {
  tls = await generateSelfSigned({
    commonName: 'receiver',
    hosts: ['127.0.0.1'],
    validityMs: 3_600_000,
    ca: true,
  });
});

const opened: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of opened.splice(0).reverse()) await o.close();
});

interface Pair {
  sandbox: RunningSandbox;
  metrics: ConnectorMetrics;
  offered: ResolvedNudge[];
  index: LruUidLocations;
  location: string;
  sink: { refuse: boolean };
}

async function connect(webhooks: Omit<WebhookOptions, 'targets'> = {}, route = ''): Promise<Pair> {
  const sandbox = await startSandbox({
    data: { seed: 9, locations: 2, callsPerLocation: 3 },
    webhooks: { retry: { initialDelayMs: 5, maxDelayMs: 20 }, faults: { delayMs: 20 }, ...webhooks },
  });
  opened.push(sandbox);
  const metrics = testMetrics();
  const offered: ResolvedNudge[] = [];
  const state = { refuse: false };
  const sink: NudgeSink = {
    offer: async (nudge) => {
      if (state.refuse) throw new Error('not now');
      offered.push(nudge);
    },
  };
  const index = new LruUidLocations(100);
  const toleranceMs = 5 * 60_000;
  const receiver = new WebhookReceiver({
    host: '127.0.0.1',
    port: 0,
    path: '/webhooks/calls',
    tls,
    bodyLimitBytes: 64 * 1024,
    rule: {
      scheme: 'standard-webhooks',
      keys: keysOf('standard-webhooks', [sandbox.admin.webhooks.secret]),
      toleranceMs,
    },
    replay: new ReplayWindow({ keepMs: 2 * toleranceMs, maxEntries: 1000 }),
    mapping: {
      eventPath: 'type',
      eventPrefix: 'call.',
      uidPath: 'data.uid',
      locationPath: 'data.locationUid',
    },
    directory: locationDirectory([{ grant: 'default', locations: sandbox.locations }]),
    index,
    sink,
    metrics,
    limits: {
      maxConnections: 64,
      maxConnectionsPerAddress: 64,
      headersTimeoutMs: 5_000,
      requestTimeoutMs: 10_000,
      nudgeTimeoutMs: 5_000,
    },
    clock: systemClock,
  });
  opened.push(receiver);
  const { url } = await receiver.start();
  sandbox.admin.webhooks.addTarget({ url: `${url}${route}`, caPem: tls.cert });
  return { sandbox, metrics, offered, index, location: sandbox.locations[0] as string, sink: state };
}

const outcome = (p: Pair, value: string) => counterValue(p.metrics.webhookDeliveries, { outcome: value });

describe('sandbox webhooks into the receiver', () => {
  it('verifies every signed delivery and nudges the location the payload names', async () => {
    const p = await connect();
    const call = p.sandbox.admin.upsertCall({ locationUid: p.location });
    p.sandbox.admin.upsertCall({ uid: call.uid });
    await p.sandbox.admin.webhooks.idle();
    expect(p.offered).toEqual([
      { event: 'call.created', uid: call.uid, locations: [p.location], resolution: 'payload_location' },
      { event: 'call.updated', uid: call.uid, locations: [p.location], resolution: 'payload_location' },
    ]);
    expect(await outcome(p, 'accepted')).toBe(2);
    expect(p.sandbox.admin.webhooks.stats()).toMatchObject({ delivered: 2, retries: 0 });
  });

  it('without a location in the payload, nudges the indexed location, else fans out to the grant', async () => {
    const p = await connect({ includeLocation: false }, '/default');
    const known = p.sandbox.admin.upsertCall({ locationUid: p.location });
    await p.sandbox.admin.webhooks.idle();
    p.index.recordPublished(known.uid, p.location);
    p.sandbox.admin.upsertCall({ uid: known.uid });
    await p.sandbox.admin.webhooks.idle();
    expect(p.offered.map((n) => [n.resolution, n.locations])).toEqual([
      ['grant_fanout', p.sandbox.locations],
      ['indexed_uid', [p.location]],
    ]);
  });

  it('refuses a badly signed first attempt and takes the retry', async () => {
    const p = await connect();
    p.sandbox.admin.webhooks.failNext('badSignature');
    p.sandbox.admin.upsertCall({ locationUid: p.location });
    await p.sandbox.admin.webhooks.idle();
    expect(await outcome(p, 'bad_signature')).toBe(1);
    expect(await outcome(p, 'accepted')).toBe(1);
    expect(p.offered).toHaveLength(1);
  });

  it('nudges once for a duplicated delivery and once for a replayed one', async () => {
    const p = await connect();
    p.sandbox.admin.webhooks.failNext('duplicate');
    p.sandbox.admin.upsertCall({ locationUid: p.location });
    p.sandbox.admin.webhooks.failNext('replay');
    p.sandbox.admin.upsertCall({ locationUid: p.location });
    await p.sandbox.admin.webhooks.idle();
    expect(p.offered).toHaveLength(2);
    expect(await outcome(p, 'replayed')).toBe(2);
  });

  it('takes reordered deliveries in the order they arrive, and never hears of a dropped one', async () => {
    const p = await connect({ faults: { delayMs: 5_000 } });
    p.sandbox.admin.webhooks.failNext('reorder');
    const first = p.sandbox.admin.upsertCall({ locationUid: p.location });
    const second = p.sandbox.admin.upsertCall({ locationUid: p.location });
    p.sandbox.admin.webhooks.failNext('drop');
    p.sandbox.admin.upsertCall({ locationUid: p.location });
    await p.sandbox.admin.webhooks.idle();
    expect(p.offered.map((n) => n.uid)).toEqual([second.uid, first.uid]);
    expect(await counterValue(p.metrics.webhookDeliveries)).toBe(2);
  });

  it('answers 503 while nudges cannot be taken, and the sandbox retries until they can', async () => {
    const p = await connect({ retry: { maxAttempts: 10, initialDelayMs: 5, maxDelayMs: 10 } });
    p.sink.refuse = true;
    p.sandbox.admin.upsertCall({ locationUid: p.location });
    // Taken again after the second refusal: the sandbox's third attempt is accepted.
    const refusals = async () => outcome(p, 'unavailable');
    while ((await refusals()) < 2) await new Promise((resolve) => setImmediate(resolve));
    p.sink.refuse = false;
    await p.sandbox.admin.webhooks.idle();
    expect(await outcome(p, 'accepted')).toBe(1);
    expect(p.offered).toHaveLength(1);
    expect(p.sandbox.admin.webhooks.stats().retries).toBeGreaterThanOrEqual(2);
  });
});
