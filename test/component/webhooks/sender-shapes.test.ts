/**
 * The sandbox signing in each sender's shape, into a receiver configured with that sender's ready
 * configuration from docs/webhooks.md: every genuine delivery is taken once, and forged, replayed and
 * re-identified (the same captured request under a fresh id) deliveries are never taken. Then the
 * registration handshakes (Slack, Zoom, RingCentral) as those senders make them.
 */
import { createHmac } from 'node:crypto';
import { startSandbox, WEBHOOK_SHAPES } from '@calls-connector/sandbox';
import { afterEach, describe, expect, it } from 'vitest';
import { testMetrics } from '../../support/metrics.js';
import { locationDirectory } from '../../../src/webhooks/location-directory.js';
import type { ResolvedNudge } from '../../../src/webhooks/nudge-resolution.js';
import { WebhookReceiver } from '../../../src/webhooks/receiver.js';
import { ReplayWindow, replayKeepMs } from '../../../src/webhooks/replay-window.js';
import { signatureRuleOf } from '../../../src/webhooks/signature/verify.js';
import { LruUidLocations } from '../../../src/webhooks/uid-locations.js';
import { systemClock, type Clock } from '../../../src/time/clock.js';
import { ManualClock } from '../../support/clock.js';
import { counterValue } from '../../support/counters.js';
import { documentedShapeOf } from '../../../tools/docs/webhook-shapes.js';
import { shapeSettings } from '../../support/webhook-shapes.js';
import { post } from './post.js';

const opened: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const o of opened.splice(0).reverse()) await o.close();
});

// Ports of this suite's receivers (a Twilio-shaped sender signs the URL, so it is known before the start).
let nextPort = 23_210;

async function receiverFor(
  configured: string,
  secrets: string[],
  location = '6f1c2c36-9f59-4f3e-8a53-3c1f1e0c6a11',
  clock: Clock = systemClock,
) {
  const port = nextPort++;
  const settings = shapeSettings(configured, { signature: { publicUrl: `http://127.0.0.1:${port}` } });
  const metrics = testMetrics();
  const offered: ResolvedNudge[] = [];
  const receiver = new WebhookReceiver({
    host: '127.0.0.1',
    port,
    path: '/webhooks/calls',
    bodyLimitBytes: 64 * 1024,
    rule: signatureRuleOf(settings.signature, secrets, settings.replay.waiveProtection),
    replay: new ReplayWindow({
      keepMs: replayKeepMs(settings.signature.toleranceMs, settings.replay.waiveProtection),
      maxEntries: 1000,
    }),
    mapping: settings.payload,
    directory: locationDirectory([{ grant: 'default', locations: [location] }]),
    index: new LruUidLocations(100),
    sink: { offer: async (nudge) => void offered.push(nudge) },
    metrics,
    limits: settings.limits,
    clock,
  });
  opened.push(receiver);
  const { url } = await receiver.start();
  return { url, metrics, offered, location };
}

describe('the sandbox signing in every sender shape, into a receiver configured for it', () => {
  it.each(WEBHOOK_SHAPES)(
    '%s: genuine deliveries taken once; forged, replayed, re-identified: none',
    async (shape) => {
      const sandbox = await startSandbox({
        data: { seed: 3, locations: 1, callsPerLocation: 1 },
        webhooks: { shape, retry: { initialDelayMs: 5, maxDelayMs: 20 }, faults: { delayMs: 10 } },
      });
      opened.push(sandbox);
      const location = sandbox.locations[0] as string;
      const r = await receiverFor(documentedShapeOf(shape), [sandbox.admin.webhooks.secret], location);
      sandbox.admin.webhooks.addTarget(r.url);
      const plain = sandbox.admin.upsertCall({ locationUid: location });
      sandbox.admin.webhooks.failNext('badSignature');
      const forged = sandbox.admin.upsertCall({ locationUid: location });
      sandbox.admin.webhooks.failNext('replay');
      sandbox.admin.webhooks.failNext('reidentify');
      const replayed = sandbox.admin.upsertCall({ locationUid: location });
      await sandbox.admin.webhooks.idle();

      const outcome = (value: string) => counterValue(r.metrics.webhookDeliveries, { outcome: value });
      // Each change nudged exactly once: the forgery, the replay and the re-identified replay took nothing.
      expect(r.offered.map((n) => n.uid).sort()).toEqual([plain.uid, forged.uid, replayed.uid].sort());
      expect(await outcome('accepted')).toBe(3);
      // The re-identified replay is refused by the signature (a signed id) or as a replay (an unsigned one).
      expect((await outcome('bad_signature')) + (await outcome('replayed'))).toBe(3);
      expect(await outcome('replayed')).toBeGreaterThanOrEqual(1);
      expect(sandbox.admin.webhooks.stats()).toMatchObject({ delivered: 3, retries: 1 });
    },
  );
});

describe('a captured delivery of a shape without a signed timestamp', () => {
  it('is never taken again: not with a fresh delivery id, not after twice the tolerance', async () => {
    const clock = new ManualClock(1_800_000_000_000);
    const location = '6f1c2c36-9f59-4f3e-8a53-3c1f1e0c6a11';
    const r = await receiverFor('github', ['gh-secret'], location, clock);
    const body = JSON.stringify({ type: 'call.updated', data: { uid: 'c1', locationUid: location } });
    const signature = `sha256=${createHmac('sha256', 'gh-secret').update(body).digest('hex')}`;
    const send = (id: string) =>
      post(r.url, { headers: { 'x-hub-signature-256': signature, 'x-github-delivery': id }, body });
    expect((await send('d-1')).status).toBe(202);
    expect((await send('d-2')).status).toBe(200);
    clock.advance(2 * 5 * 60_000 + 1);
    expect(JSON.parse((await send('d-3')).body)).toEqual({ status: 'replayed' });
    expect(r.offered).toHaveLength(1);
  });
});

describe('registration handshakes', () => {
  it("answers Slack's signed url_verification with its challenge, and not an unsigned one", async () => {
    const r = await receiverFor('slack', ['slack-secret']);
    const t = Math.floor(Date.now() / 1000);
    const body = JSON.stringify({
      token: 'x',
      challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P',
      type: 'url_verification',
    });
    const signature = `v0=${createHmac('sha256', 'slack-secret').update(`v0:${t}:${body}`).digest('hex')}`;
    const answer = await post(r.url, {
      headers: { 'x-slack-request-timestamp': String(t), 'x-slack-signature': signature },
      body,
    });
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({
      challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P',
    });
    const unsigned = await post(r.url, { headers: { 'x-slack-request-timestamp': String(t) }, body });
    expect(unsigned.status).toBe(401);
    expect(r.offered).toEqual([]);
  });

  it("answers Zoom's endpoint.url_validation with the token and its HMAC under the secret", async () => {
    const r = await receiverFor('zoom', ['zoom-secret']);
    const t = Math.floor(Date.now() / 1000);
    const body = JSON.stringify({
      payload: { plainToken: 'qgg8vlvZRS6UYooatFL8Aw' },
      event_ts: t * 1000,
      event: 'endpoint.url_validation',
    });
    const signature = `v0=${createHmac('sha256', 'zoom-secret').update(`v0:${t}:${body}`).digest('hex')}`;
    const answer = await post(r.url, {
      headers: { 'x-zm-request-timestamp': String(t), 'x-zm-signature': signature },
      body,
    });
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toEqual({
      plainToken: 'qgg8vlvZRS6UYooatFL8Aw',
      encryptedToken: createHmac('sha256', 'zoom-secret').update('qgg8vlvZRS6UYooatFL8Aw').digest('hex'),
    });
  });

  it("echoes RingCentral's Validation-Token with 200, with any body or none, and nudges nothing", async () => {
    const r = await receiverFor('ringcentral', ['rc-token']);
    const answer = await post(r.url, {
      headers: { 'validation-token': 'vt-1234', 'content-type': '' },
      body: '',
    });
    expect(answer.status).toBe(200);
    expect(answer.headers['validation-token']).toBe('vt-1234');
    expect(r.offered).toEqual([]);
    expect(await counterValue(r.metrics.webhookDeliveries, { outcome: 'ignored' })).toBe(1);
  });
});
