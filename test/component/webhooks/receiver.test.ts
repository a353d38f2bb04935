import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { connect } from 'node:net';
import { generateSelfSigned } from '@calls-connector/self-signed';
import { afterEach, describe, expect, it } from 'vitest';
import type { ConnectorMetrics } from '../../../src/metrics/metrics.js';
import { testMetrics } from '../../support/metrics.js';
import { primeWebhookMetrics } from '../../../src/metrics/webhook-metrics.js';
import { locationDirectory } from '../../../src/webhooks/location-directory.js';
import type { ResolvedNudge } from '../../../src/webhooks/nudge-resolution.js';
import type { NudgeSink } from '../../../src/webhooks/nudge-sink.js';
import { WebhookReceiver, type WebhookReceiverOptions } from '../../../src/webhooks/receiver.js';
import { ReplayWindow } from '../../../src/webhooks/replay-window.js';
import { standardWebhooksSignature } from '../../../src/webhooks/signature/standard-webhooks.js';
import { LruUidLocations } from '../../../src/webhooks/uid-locations.js';
import { counterValue } from '../../support/counters.js';
import { clockReading, ManualClock } from '../../support/clock.js';
import { capturingLogger } from '../../support/logger.js';
import { post } from './post.js';

const L1 = '6f1c2c36-9f59-4f3e-8a53-3c1f1e0c6a11';
const L2 = '7a2d3d47-0a6a-4f4f-9b64-4d2a2f1d7b22';
const KEY = randomBytes(32);
const TOLERANCE = 5 * 60_000;
const NOW = 1_800_000_000_000;
const LIMITS = {
  maxConnections: 64,
  maxConnectionsPerAddress: 64,
  headersTimeoutMs: 5_000,
  requestTimeoutMs: 10_000,
  nudgeTimeoutMs: 5_000,
};

interface Harness {
  receiver: WebhookReceiver;
  url: string;
  metrics: ConnectorMetrics;
  offered: ResolvedNudge[];
  index: LruUidLocations;
  setNow(ms: number): void;
}

const open: WebhookReceiver[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((r) => r.close()));
});

async function start(overrides: Partial<WebhookReceiverOptions> = {}): Promise<Harness> {
  const metrics = testMetrics();
  primeWebhookMetrics(metrics);
  const offered: ResolvedNudge[] = [];
  let now = NOW;
  const index = new LruUidLocations(100);
  const sink: NudgeSink = { offer: async (nudge) => void offered.push(nudge) };
  const receiver = new WebhookReceiver({
    host: '127.0.0.1',
    port: 0,
    path: '/webhooks/calls',
    bodyLimitBytes: 1024,
    rule: { scheme: 'standard-webhooks', keys: [KEY], toleranceMs: TOLERANCE },
    replay: new ReplayWindow({ keepMs: 2 * TOLERANCE, maxEntries: 100 }),
    mapping: {
      eventPath: 'type',
      eventPrefix: 'call.',
      uidPath: 'data.uid',
      locationPath: 'data.locationUid',
    },
    directory: locationDirectory([
      { grant: 'alpha', locations: [L1] },
      { grant: 'beta', locations: [L2] },
    ]),
    index,
    sink,
    metrics,
    limits: LIMITS,
    clock: clockReading(() => now),
    ...overrides,
  });
  open.push(receiver);
  const { url } = await receiver.start();
  return { receiver, url, metrics, offered, index, setNow: (ms) => (now = ms) };
}

let seq = 0;
function signed(payload: unknown, options: { id?: string; atMs?: number; key?: Buffer } = {}) {
  const body = JSON.stringify(payload);
  const id = options.id ?? `msg_${++seq}`;
  const seconds = Math.floor((options.atMs ?? NOW) / 1000);
  return {
    body,
    headers: {
      'webhook-id': id,
      'webhook-timestamp': String(seconds),
      'webhook-signature': standardWebhooksSignature(options.key ?? KEY, id, seconds, Buffer.from(body)),
    },
  };
}

/** Counts the receiver's replay checks, so a test knows a request got that far. */
function replayChecks(replay: ReplayWindow): { count: number } {
  const checks = { count: 0 };
  const has = replay.has.bind(replay);
  replay.has = (id, nowMs) => {
    checks.count += 1;
    return has(id, nowMs);
  };
  return checks;
}

/** Waits for a condition the receiver reaches on its own (each turn of the event loop). */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setImmediate(resolve));
}

/** Sends raw bytes and resolves with everything answered once the receiver closes the connection. */
async function exchange(port: number, text: string): Promise<string> {
  return (await opened(port, text, '127.0.0.1')).closed;
}

/**
 * Opens a connection from `localAddress` (any 127.0.0.0/8 address reaches a loopback listener), writes `text`
 * and keeps the connection open; resolves once connected, with `closed`: what is answered until it is closed.
 */
function opened(port: number, text: string, localAddress: string): Promise<{ closed: Promise<string> }> {
  return new Promise((resolveOpened, rejectOpened) => {
    const socket = connect({ port, host: '127.0.0.1', localAddress });
    const chunks: Buffer[] = [];
    const closed = new Promise<string>((resolve) => {
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    });
    socket.on('error', (error) => {
      if (socket.connecting) rejectOpened(error); // else reset by the receiver: `closed` says what was answered
    });
    socket.once('connect', () => socket.write(text, () => resolveOpened({ closed })));
  });
}

const outcome = (metrics: ConnectorMetrics, value: string) =>
  counterValue(metrics.webhookDeliveries, { outcome: value });

describe('the webhook receiver over HTTP', () => {
  it('answers 202 once the nudge is taken, and counts it by how its location was found', async () => {
    const h = await start();
    const answer = await post(h.url, signed({ type: 'call.updated', data: { uid: 'c1', locationUid: L1 } }));
    expect(answer.status).toBe(202);
    expect(h.offered).toEqual([
      { event: 'call.updated', uid: 'c1', locations: [L1], resolution: 'payload_location' },
    ]);
    expect(await outcome(h.metrics, 'accepted')).toBe(1);
    expect(await counterValue(h.metrics.webhookNudges, { resolution: 'payload_location' })).toBe(1);
  });

  it("resolves a delivery without a location through the uid index, else the path's grant", async () => {
    const h = await start();
    h.index.recordPublished('known', L2);
    expect((await post(h.url, signed({ type: 'call.created', data: { uid: 'known' } }))).status).toBe(202);
    expect(
      (await post(`${h.url}/alpha`, signed({ type: 'call.created', data: { uid: 'new' } }))).status,
    ).toBe(202);
    expect(h.offered.map((n) => [n.resolution, n.locations])).toEqual([
      ['indexed_uid', [L2]],
      ['grant_fanout', [L1]],
    ]);
    expect((await post(`${h.url}/gamma`, signed({ type: 'call.created', data: { uid: 'x' } }))).status).toBe(
      404,
    );
  });

  it('refuses a forged signature with 401 and nudges nothing', async () => {
    const h = await start();
    const forged = signed(
      { type: 'call.updated', data: { uid: 'c1', locationUid: L1 } },
      { key: randomBytes(32) },
    );
    const answer = await post(h.url, forged);
    expect(answer.status).toBe(401);
    expect(answer.body).not.toMatch(/secret|match/);
    expect(h.offered).toEqual([]);
    expect(await outcome(h.metrics, 'bad_signature')).toBe(1);
  });

  it('refuses a body altered after signing', async () => {
    const h = await start();
    const delivery = signed({ type: 'call.updated', data: { uid: 'c1', locationUid: L1 } });
    const answer = await post(h.url, { ...delivery, body: delivery.body.replace('c1', 'c2') });
    expect(answer.status).toBe(401);
    expect(await outcome(h.metrics, 'bad_signature')).toBe(1);
  });

  it('refuses an unsigned delivery with 401, counted as unsigned', async () => {
    const h = await start();
    const answer = await post(h.url, { body: JSON.stringify({ type: 'call.updated', data: { uid: 'c1' } }) });
    expect(answer.status).toBe(401);
    expect(await outcome(h.metrics, 'unsigned')).toBe(1);
  });

  it('refuses an authentic delivery whose timestamp is beyond the tolerance', async () => {
    const h = await start();
    const old = signed({ type: 'call.updated', data: { uid: 'c1' } }, { atMs: NOW - TOLERANCE - 1000 });
    expect((await post(h.url, old)).status).toBe(401);
    expect(await outcome(h.metrics, 'stale_timestamp')).toBe(1);
  });

  it('answers a replayed delivery 200 without a second nudge', async () => {
    const h = await start();
    const delivery = signed({ type: 'call.updated', data: { uid: 'c1', locationUid: L1 } });
    expect((await post(h.url, delivery)).status).toBe(202);
    h.setNow(NOW + 60_000);
    const replay = await post(h.url, delivery);
    expect(replay.status).toBe(200);
    expect(JSON.parse(replay.body)).toEqual({ status: 'replayed' });
    expect(h.offered).toHaveLength(1);
    expect(await outcome(h.metrics, 'replayed')).toBe(1);
  });

  it('answers a duplicate that arrives while the first nudge is offered only once that offer is taken', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const offered: ResolvedNudge[] = [];
    const replay = new ReplayWindow({ keepMs: 2 * TOLERANCE, maxEntries: 100 });
    const checks = replayChecks(replay);
    const h = await start({
      replay,
      sink: {
        offer: async (nudge) => {
          offered.push(nudge);
          await gate;
        },
      },
    });
    const delivery = signed({ type: 'call.updated', data: { uid: 'c1', locationUid: L1 } });
    const first = post(h.url, delivery);
    await until(() => offered.length === 1);
    const duplicate = post(h.url, delivery);
    await until(() => checks.count === 2); // the duplicate reached the replay check
    release();
    expect((await first).status).toBe(202);
    const answer = await duplicate;
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({ status: 'replayed' });
    expect(offered).toHaveLength(1);
  });

  it('answers a duplicate 503 when the pending first offer then fails, and takes the retry', async () => {
    let fail: (error: Error) => void = () => undefined;
    const failing = new Promise<void>((_, reject) => (fail = reject));
    const offered: ResolvedNudge[] = [];
    const replay = new ReplayWindow({ keepMs: 2 * TOLERANCE, maxEntries: 100 });
    const checks = replayChecks(replay);
    const h = await start({
      replay,
      sink: {
        offer: async (nudge) => {
          offered.push(nudge);
          if (offered.length === 1) await failing;
        },
      },
    });
    const delivery = signed({ type: 'call.updated', data: { uid: 'c1', locationUid: L1 } });
    const first = post(h.url, delivery);
    await until(() => offered.length === 1);
    const duplicate = post(h.url, delivery);
    await until(() => checks.count === 2);
    fail(new Error('leader election'));
    expect((await first).status).toBe(503);
    expect((await duplicate).status).toBe(503);
    const retry = await post(h.url, delivery);
    expect(retry.status).toBe(202);
    expect(offered).toHaveLength(2);
    expect(await outcome(h.metrics, 'unavailable')).toBe(2);
  });

  it('answers 503 when the nudge is not taken within nudgeTimeoutMs, and takes the retry', async () => {
    const clock = new ManualClock(NOW);
    let calls = 0;
    const h = await start({
      clock,
      sink: {
        offer: () => (++calls === 1 ? new Promise<void>(() => undefined) : Promise.resolve()),
      },
    });
    const delivery = signed({ type: 'call.updated', data: { uid: 'c1', locationUid: L1 } });
    const first = post(h.url, delivery);
    await clock.sleepingFor(LIMITS.nudgeTimeoutMs);
    clock.advance(LIMITS.nudgeTimeoutMs);
    const answer = await first;
    expect(answer.status).toBe(503);
    expect(answer.headers['retry-after']).toBe('5');
    expect((await post(h.url, delivery)).status).toBe(202);
    expect(calls).toBe(2);
  });

  it('answers 503 when the sink cannot take the nudge, and takes the same delivery when it is retried', async () => {
    let refuse = true;
    const offered: ResolvedNudge[] = [];
    const h = await start({
      sink: {
        offer: async (nudge) => {
          if (refuse) throw new Error('scheduler busy');
          offered.push(nudge);
        },
      },
    });
    const delivery = signed({ type: 'call.updated', data: { uid: 'c1', locationUid: L1 } });
    const first = await post(h.url, delivery);
    expect(first.status).toBe(503);
    expect(first.headers['retry-after']).toBe('5');
    refuse = false;
    expect((await post(h.url, delivery)).status).toBe(202);
    expect(offered).toHaveLength(1);
    expect(await outcome(h.metrics, 'unavailable')).toBe(1);
    expect(await outcome(h.metrics, 'accepted')).toBe(1);
  });

  it('refuses a body over the limit with 413 before verifying it, declared or streamed', async () => {
    const h = await start();
    const big = signed({ type: 'call.updated', data: { uid: 'c1', pad: 'x'.repeat(2000) } });
    const answer = await post(h.url, big);
    expect(answer.status).toBe(413);
    expect(await outcome(h.metrics, 'too_large')).toBe(1);
    expect(h.offered).toEqual([]);
  });

  it('acknowledges events other than call.* and calls without a location of ours, nudging nothing', async () => {
    const h = await start();
    expect((await post(h.url, signed({ type: 'review.created', data: {} }))).status).toBe(200);
    expect(
      (await post(h.url, signed({ type: 'call.updated', data: { uid: 'c1', locationUid: 'not-ours' } })))
        .status,
    ).toBe(200);
    expect(await outcome(h.metrics, 'ignored')).toBe(2);
    expect(h.offered).toEqual([]);
  });

  it('answers malformed payloads 400 and other content types 400, without nudging', async () => {
    const h = await start();
    expect((await post(h.url, signed({ type: 'call.updated', data: {} }))).status).toBe(400);
    const text = signed({ type: 'call.updated', data: { uid: 'c1' } });
    const answer = await post(h.url, { ...text, headers: { ...text.headers, 'content-type': 'text/plain' } });
    expect(answer.status).toBe(400);
    expect(await outcome(h.metrics, 'malformed')).toBe(2);
  });

  it('answers 404 off its path and 405 to other methods, counting neither as a delivery', async () => {
    const h = await start();
    const origin = new URL(h.url).origin;
    expect((await post(`${origin}/metrics`, signed({ type: 'call.updated' }))).status).toBe(404);
    expect((await post(`${h.url}/%E0%A4%A`, signed({ type: 'call.updated' }))).status).toBe(404);
    const get = await post(h.url, { method: 'GET' });
    expect(get.status).toBe(405);
    expect(get.headers.allow).toBe('POST');
    expect(await counterValue(h.metrics.webhookDeliveries)).toBe(0);
  });

  it('accepts anything when signatures are off (development), and logs no body', async () => {
    const { logger, text } = capturingLogger();
    const h = await start({ rule: { scheme: 'none' }, logger });
    const answer = await post(h.url, {
      body: JSON.stringify({ type: 'call.updated', data: { uid: 'c1', locationUid: L1 } }),
    });
    expect(answer.status).toBe(202);
    expect(text()).not.toContain('call.updated');
  });

  it('fails to start with WEBHOOK_LISTEN_FAILED on a port in use', async () => {
    const h = await start();
    const second = new WebhookReceiver({
      ...otherReceiverOptions(),
      port: Number(new URL(h.url).port),
    });
    await expect(second.start()).rejects.toMatchObject({ code: 'WEBHOOK_LISTEN_FAILED' });
  });
});

describe('the webhook receiver and malformed requests', () => {
  it('answers a request target that is not a URL 400, logging nothing above debug', async () => {
    const { logger, lines } = capturingLogger();
    const h = await start({ logger });
    const { port } = new URL(h.url);
    const answer = await exchange(
      Number(port),
      'POST http://[ HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n' +
        'Content-Length: 2\r\n\r\n{}',
    );
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    const garbage = await exchange(Number(port), 'NOT A REQUEST\r\n\r\n');
    expect(garbage).toMatch(/^HTTP\/1\.1 400 /);
    expect(lines().filter((l) => Number(l.level) > 20)).toEqual([]);
    expect(await counterValue(h.metrics.webhookDeliveries)).toBe(0);
    expect(
      (await post(h.url, signed({ type: 'call.updated', data: { uid: 'c1', locationUid: L1 } }))).status,
    ).toBe(202);
  });
});

describe('the webhook receiver and many slow connections', () => {
  it('refuses connections over the per-address and overall caps, counting each by its cap, and cuts slow requests with 408', async () => {
    const { logger, lines } = capturingLogger();
    const h = await start({
      logger,
      limits: {
        ...LIMITS,
        maxConnections: 5,
        maxConnectionsPerAddress: 3,
        headersTimeoutMs: 300,
        requestTimeoutMs: 600,
      },
    });
    const port = Number(new URL(h.url).port);
    // 60 bytes of a declared 1,000-byte body, then nothing more.
    const partial =
      'POST /webhooks/calls HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
      'Content-Length: 1000\r\n\r\n' +
      '{"type":"call.updated","data":{"uid":"c1","pad":"xxxxxxxxxxx';
    const slowHeaders = 'POST /webhooks/calls HTTP/1.1\r\nHost: x\r\n';
    const held: Promise<string>[] = [];
    for (let i = 0; i < 3; i++) held.push((await opened(port, partial, '127.0.0.1')).closed);
    const overAddress = (await opened(port, partial, '127.0.0.1')).closed;
    held.push((await opened(port, slowHeaders, '127.0.0.2')).closed);
    held.push((await opened(port, partial, '127.0.0.2')).closed);
    const overAll = (await opened(port, partial, '127.0.0.3')).closed;
    // Refused: closed without a byte of answer. Held: each cut with a 408 once its time is up.
    expect(await overAddress).toBe('');
    expect(await overAll).toBe('');
    const refused = (reason: string) => counterValue(h.metrics.webhookConnectionsRefused, { reason });
    expect(await refused('per_address')).toBe(1);
    expect(await refused('max_connections')).toBe(1);
    for (const answer of await Promise.all(held)) expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(lines().filter((l) => Number(l.level) > 20)).toEqual([]);
    // Once they are gone, a genuine delivery is served.
    const delivery = signed({ type: 'call.updated', data: { uid: 'c1', locationUid: L1 } });
    expect((await post(h.url, delivery)).status).toBe(202);
  }, 8_000);
});

describe('the webhook receiver and a sender that hangs up', () => {
  it('keeps serving after a sender hangs up mid-body, logging it at debug only', async () => {
    const { logger, lines } = capturingLogger();
    const h = await start({ logger });
    await new Promise<void>((resolve) => {
      const req = request(h.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': 500 },
      });
      req.on('error', () => resolve());
      req.write('{"type":', () => setImmediate(() => req.destroy()));
      req.on('close', () => resolve());
    });
    const answer = await post(h.url, signed({ type: 'call.updated', data: { uid: 'c1', locationUid: L1 } }));
    expect(answer.status).toBe(202);
    expect(lines().filter((l) => Number(l.level) >= 50)).toEqual([]);
  });
});

describe('the webhook receiver over HTTPS', () => {
  it('serves deliveries with its certificate', async () => {
    const pair = await generateSelfSigned({
      commonName: 'receiver',
      hosts: ['127.0.0.1'],
      validityMs: 3_600_000,
      ca: true,
    });
    const h = await start({ tls: pair });
    expect(h.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/webhooks\/calls$/);
    const answer = await post(h.url, {
      ...signed({ type: 'call.updated', data: { uid: 'c1', locationUid: L1 } }),
      ca: pair.cert,
    });
    expect(answer.status).toBe(202);
    const forged = signed(
      { type: 'call.updated', data: { uid: 'c1', locationUid: L1 } },
      { key: randomBytes(32) },
    );
    expect((await post(h.url, { ...forged, ca: pair.cert })).status).toBe(401);
  });
});

/** A second receiver's options (the test that uses it gives it the first one's port). */
function otherReceiverOptions(): WebhookReceiverOptions {
  return {
    host: '127.0.0.1',
    port: 0,
    path: '/webhooks/calls',
    bodyLimitBytes: 1024,
    rule: { scheme: 'none' },
    replay: new ReplayWindow({ keepMs: 1, maxEntries: 1 }),
    mapping: {
      eventPath: 'type',
      eventPrefix: 'call.',
      uidPath: 'data.uid',
      locationPath: 'data.locationUid',
    },
    directory: locationDirectory([]),
    index: new LruUidLocations(1),
    sink: { offer: async () => undefined },
    metrics: testMetrics(),
    limits: LIMITS,
    clock: clockReading(() => NOW),
  };
}
