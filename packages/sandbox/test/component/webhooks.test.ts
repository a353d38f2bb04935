/**
 * The sandbox's call.* webhooks against a recording target on loopback: signed deliveries on every change,
 * retries with backoff, and each fault observed at the target. `admin.webhooks.idle()` says when every
 * delivery (retries, delays, replays included) is done, so no test waits on time.
 */
import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startSandbox, type RunningSandbox, type WebhookOptions } from '../../src/index.js';
import { SandboxTestClient } from './client.js';

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

interface Target {
  url: string;
  received: Received[];
  /** Statuses to answer, in order; then 200. */
  answers: number[];
  close(): Promise<void>;
}

async function startTarget(): Promise<Target> {
  const received: Received[] = [];
  const answers: number[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.statusCode = answers.shift() ?? 200;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    answers,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** Whether the delivery's signature is the HMAC of id.timestamp.body under the secret (computed here anew). */
function verifies(secret: string, r: Received): boolean {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const signed = `${String(r.headers['webhook-id'])}.${String(r.headers['webhook-timestamp'])}.${r.body}`;
  const expected = `v1,${createHmac('sha256', key).update(signed).digest('base64')}`;
  return String(r.headers['webhook-signature']).split(' ').includes(expected);
}

const opened: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of opened.splice(0).reverse()) await o.close();
});

async function setUp(
  webhooks: Omit<WebhookOptions, 'targets'> = {},
): Promise<{ sandbox: RunningSandbox; target: Target }> {
  const target = await startTarget();
  opened.push(target);
  const sandbox = await startSandbox({
    data: { seed: 3, locations: 2, callsPerLocation: 5 },
    webhooks: {
      retry: { initialDelayMs: 5, maxDelayMs: 20 },
      faults: { delayMs: 30 },
      ...webhooks,
      targets: [target.url],
    },
  });
  opened.push(sandbox);
  return { sandbox, target };
}

const eventOf = (r: Received) => JSON.parse(r.body) as { type: string; data: Record<string, unknown> };

describe('sandbox webhooks', () => {
  it('sends a signed call.created for a new call and call.updated for a change, with the location', async () => {
    const { sandbox, target } = await setUp();
    const location = sandbox.locations[0] as string;
    const created = sandbox.admin.upsertCall({ locationUid: location });
    sandbox.admin.upsertCall({ uid: created.uid, isPrivate: true });
    await sandbox.admin.webhooks.idle();
    expect(target.received.map(eventOf)).toEqual([
      expect.objectContaining({
        type: 'call.created',
        data: {
          uid: created.uid,
          locationUid: location,
          locationPhoneNumber: null,
          customerPhoneNumber: null,
        },
      }),
      expect.objectContaining({ type: 'call.updated' }),
    ]);
    expect(eventOf(target.received[1] as Received).data.uid).toBe(created.uid);
    expect(target.received.every((r) => verifies(sandbox.admin.webhooks.secret, r))).toBe(true);
    expect(target.received.every((r) => r.headers['content-type'] === 'application/json')).toBe(true);
    expect(sandbox.admin.webhooks.stats()).toMatchObject({ events: 2, delivered: 2, requests: 2 });
  });

  it('leaves the location out when told to', async () => {
    const { sandbox, target } = await setUp({ includeLocation: false });
    sandbox.admin.upsertCall({ locationUid: sandbox.locations[0] });
    await sandbox.admin.webhooks.idle();
    expect(eventOf(target.received[0] as Received).data).not.toHaveProperty('locationUid');
  });

  it('retries a non-2xx answer with the same id, signed anew, until a 2xx', async () => {
    const { sandbox, target } = await setUp();
    target.answers.push(500, 503);
    sandbox.admin.upsertCall({ locationUid: sandbox.locations[0] });
    await sandbox.admin.webhooks.idle();
    expect(target.received).toHaveLength(3);
    expect(new Set(target.received.map((r) => r.headers['webhook-id'])).size).toBe(1);
    expect(target.received.every((r) => verifies(sandbox.admin.webhooks.secret, r))).toBe(true);
    expect(sandbox.admin.webhooks.stats()).toMatchObject({
      retries: 2,
      delivered: 1,
      byStatus: { 500: 1, 503: 1, 200: 1 },
    });
    expect(sandbox.admin.webhooks.deliveries()[0]).toMatchObject({ attempts: 3, state: 'delivered' });
  });

  it('gives up after maxAttempts on connection errors', async () => {
    const { sandbox, target } = await setUp({ retry: { maxAttempts: 3, initialDelayMs: 1, maxDelayMs: 5 } });
    await target.close();
    sandbox.admin.upsertCall({ locationUid: sandbox.locations[0] });
    await sandbox.admin.webhooks.idle();
    expect(sandbox.admin.webhooks.stats()).toMatchObject({ failed: 1, retries: 2, byStatus: { error: 3 } });
    expect(sandbox.admin.webhooks.deliveries()[0]).toMatchObject({ attempts: 3, state: 'failed' });
  });

  it('retries as long as its retry options say, and refuses delays that cannot be', async () => {
    const { sandbox, target } = await setUp({ retry: { maxAttempts: 9, initialDelayMs: 0, maxDelayMs: 1 } });
    await target.close();
    sandbox.admin.upsertCall({ locationUid: sandbox.locations[0] });
    await sandbox.admin.webhooks.idle();
    expect(sandbox.admin.webhooks.stats()).toMatchObject({ failed: 1, retries: 8, byStatus: { error: 9 } });
    await expect(setUp({ retry: { initialDelayMs: 50, maxDelayMs: 10 } })).rejects.toThrow(/retry delays/);
  });

  it('drops a delivery on demand', async () => {
    const { sandbox, target } = await setUp();
    sandbox.admin.webhooks.failNext('drop');
    sandbox.admin.upsertCall({ locationUid: sandbox.locations[0] });
    sandbox.admin.upsertCall({ locationUid: sandbox.locations[0] });
    await sandbox.admin.webhooks.idle();
    expect(target.received).toHaveLength(1);
    expect(sandbox.admin.webhooks.deliveries().map((d) => d.state)).toEqual(['dropped', 'delivered']);
  });

  it('duplicates a delivery byte for byte on demand', async () => {
    const { sandbox, target } = await setUp();
    sandbox.admin.webhooks.failNext('duplicate');
    sandbox.admin.upsertCall({ locationUid: sandbox.locations[0] });
    await sandbox.admin.webhooks.idle();
    expect(target.received).toHaveLength(2);
    const [a, b] = target.received as [Received, Received];
    expect(b.body).toBe(a.body);
    expect(b.headers['webhook-signature']).toBe(a.headers['webhook-signature']);
  });

  it('signs the first attempt badly on demand, and the retry well', async () => {
    const { sandbox, target } = await setUp();
    sandbox.admin.webhooks.failNext('badSignature');
    target.answers.push(401);
    sandbox.admin.upsertCall({ locationUid: sandbox.locations[0] });
    await sandbox.admin.webhooks.idle();
    expect(target.received.map((r) => verifies(sandbox.admin.webhooks.secret, r))).toEqual([false, true]);
  });

  it('replays an accepted delivery later, unchanged', async () => {
    const { sandbox, target } = await setUp();
    sandbox.admin.webhooks.failNext('replay');
    sandbox.admin.upsertCall({ locationUid: sandbox.locations[0] });
    await sandbox.admin.webhooks.idle();
    expect(target.received).toHaveLength(2);
    expect(target.received[1]).toEqual(target.received[0]);
  });

  it('reorders: a held delivery arrives after the next one', async () => {
    const { sandbox, target } = await setUp({ faults: { delayMs: 5_000 } });
    sandbox.admin.webhooks.failNext('reorder');
    const first = sandbox.admin.upsertCall({ locationUid: sandbox.locations[0] });
    const second = sandbox.admin.upsertCall({ locationUid: sandbox.locations[0] });
    await sandbox.admin.webhooks.idle();
    expect(target.received.map((r) => eventOf(r).data.uid)).toEqual([second.uid, first.uid]);
  });

  it('delays a delivery on demand, still delivering it', async () => {
    const { sandbox, target } = await setUp();
    sandbox.admin.webhooks.failNext('delay');
    sandbox.admin.upsertCall({ locationUid: sandbox.locations[0] });
    expect(target.received).toHaveLength(0);
    await sandbox.admin.webhooks.idle();
    expect(target.received).toHaveLength(1);
    expect(sandbox.admin.webhooks.stats().faults.delay).toBe(1);
  });

  it('takes targets and faults through the admin API', async () => {
    const target = await startTarget();
    opened.push(target);
    const sandbox = await startSandbox({ data: { seed: 3, locations: 1, callsPerLocation: 1 } });
    opened.push(sandbox);
    const client = new SandboxTestClient(sandbox);
    opened.push({ close: () => client.close() });
    const json = { 'content-type': 'application/json' };
    const registered = await client.send('POST', '/_sandbox/webhooks/targets', {
      headers: json,
      body: JSON.stringify({ url: target.url }),
    });
    expect(registered.json).toEqual({ data: [target.url] });
    const rates = await client.send('PUT', '/_sandbox/webhooks/faults', {
      headers: json,
      body: JSON.stringify({ rates: { drop: 1 } }),
    });
    expect(rates.json).toMatchObject({ data: { rates: { drop: 1 } } });
    expect(
      (
        await client.send('POST', '/_sandbox/webhooks/faults/once', {
          headers: json,
          body: '{"fault":"explode"}',
        })
      ).status,
    ).toBe(400);
    sandbox.admin.upsertCall({ locationUid: sandbox.locations[0] });
    await sandbox.admin.webhooks.idle();
    expect(target.received).toHaveLength(0);
    const stats = await client.send('GET', '/_sandbox/webhooks/stats');
    expect(stats.json).toMatchObject({ data: { events: 1, faults: { drop: 1 } } });
    expect(JSON.stringify((await client.send('GET', '/_sandbox/webhooks/targets')).json)).not.toContain(
      'whsec_',
    );
  });
});
