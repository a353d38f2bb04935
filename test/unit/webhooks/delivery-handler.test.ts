import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { testMetrics } from '../../support/metrics.js';
import { DeliveryHandler, type IncomingDelivery } from '../../../src/webhooks/delivery-handler.js';
import { locationDirectory } from '../../../src/webhooks/location-directory.js';
import type { ResolvedNudge } from '../../../src/webhooks/nudge-resolution.js';
import type { NudgeSink } from '../../../src/webhooks/nudge-sink.js';
import { ReplayWindow } from '../../../src/webhooks/replay-window.js';
import { standardWebhooksSignature } from '../../../src/webhooks/signature/standard-webhooks.js';
import { LruUidLocations } from '../../../src/webhooks/uid-locations.js';
import { ManualClock } from '../../support/clock.js';

const L1 = '6f1c2c36-9f59-4f3e-8a53-3c1f1e0c6a11';
const KEY = randomBytes(32);
const NOW = 1_800_000_000_000;

function handler(sink: NudgeSink, replay = new ReplayWindow({ keepMs: 600_000, maxEntries: 100 })) {
  return new DeliveryHandler({
    rule: { scheme: 'standard-webhooks', keys: [KEY], toleranceMs: 300_000 },
    replay,
    mapping: {
      eventPath: 'type',
      eventPrefix: 'call.',
      uidPath: 'data.uid',
      locationPath: 'data.locationUid',
    },
    directory: locationDirectory([{ grant: 'alpha', locations: [L1] }]),
    index: new LruUidLocations(100),
    sink,
    nudgeTimeoutMs: 5_000,
    metrics: testMetrics(),
    clock: new ManualClock(NOW),
  });
}

/** A signed delivery of `payload`, whose body is read (or discarded) as the receiver would. */
function delivery(payload: object, id = 'msg_1', headers: Record<string, string> = {}) {
  const body = Buffer.from(JSON.stringify(payload));
  const seconds = Math.floor(NOW / 1000);
  const events: string[] = [];
  const incoming: IncomingDelivery = {
    headers: {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(seconds),
      'webhook-signature': standardWebhooksSignature(KEY, id, seconds, body),
      ...headers,
    },
    target: '/webhooks/calls',
    grant: null,
    readBody: () => {
      events.push('read');
      return Promise.resolve(body);
    },
    discard: () => events.push('discarded'),
  };
  return { incoming, events };
}

const CALL = { type: 'call.updated', data: { uid: 'c1', locationUid: L1 } };

describe('DeliveryHandler (a routed delivery, without HTTP)', () => {
  it('accepts a signed call event once its nudge is taken, then calls a retry of it replayed', async () => {
    const offered: ResolvedNudge[] = [];
    const deliveries = handler({ offer: async (nudge) => void offered.push(nudge) });

    expect(await deliveries.handle(delivery(CALL).incoming)).toEqual({ outcome: 'accepted' });
    expect(await deliveries.handle(delivery(CALL).incoming)).toEqual({ outcome: 'replayed' });
    expect(offered).toEqual([
      { uid: 'c1', event: 'call.updated', locations: [L1], resolution: 'payload_location' },
    ]);
  });

  it('hands the sink the replay key with its verification time, to share with the other instances', async () => {
    const shared: unknown[] = [];
    const deliveries = handler({ offer: async (_nudge, replay) => void shared.push(replay) });
    expect(await deliveries.handle(delivery(CALL, 'msg_9').incoming)).toEqual({ outcome: 'accepted' });
    expect(shared).toEqual([{ key: 'id:msg_9', atMs: NOW }]);
  });

  it('answers replayed, nudging nothing, a delivery another instance took (its key read from the nudge topic)', async () => {
    const window = new ReplayWindow({ keepMs: 600_000, maxEntries: 100 });
    const offered: ResolvedNudge[] = [];
    const deliveries = handler({ offer: async (nudge) => void offered.push(nudge) }, window);
    window.recordShared('id:msg_elsewhere', NOW - 1_000, NOW);
    expect(await deliveries.handle(delivery(CALL, 'msg_elsewhere').incoming)).toEqual({
      outcome: 'replayed',
    });
    expect(offered).toEqual([]);
  });

  it('refuses a body that is not JSON by its content type without reading it', async () => {
    const { incoming, events } = delivery(CALL, 'msg_2', { 'content-type': 'text/plain' });
    expect(await handler({ offer: async () => undefined }).handle(incoming)).toEqual({
      outcome: 'malformed',
    });
    expect(events).toEqual(['discarded']);
  });

  it('answers too_large when the body is over the limit, and bad_signature for a forged one', async () => {
    const deliveries = handler({ offer: async () => undefined });
    const large = delivery(CALL, 'msg_3');
    expect(
      await deliveries.handle({ ...large.incoming, readBody: () => Promise.resolve(undefined) }),
    ).toEqual({
      outcome: 'too_large',
    });
    const forged = delivery(CALL, 'msg_4', {
      'webhook-signature': `v1,${randomBytes(32).toString('base64')}`,
    });
    expect(await deliveries.handle(forged.incoming)).toEqual({ outcome: 'bad_signature' });
  });

  it('answers unavailable when the sink refuses, and takes the retry once the sink does', async () => {
    let refuse = true;
    const deliveries = handler({
      offer: () => (refuse ? Promise.reject(new Error('standing by')) : Promise.resolve()),
    });
    expect(await deliveries.handle(delivery(CALL, 'msg_5').incoming)).toEqual({ outcome: 'unavailable' });
    refuse = false;
    expect(await deliveries.handle(delivery(CALL, 'msg_5').incoming)).toEqual({ outcome: 'accepted' });
  });

  it('ignores an event that is not a call event', async () => {
    const deliveries = handler({ offer: () => Promise.reject(new Error('not offered')) });
    expect(await deliveries.handle(delivery({ type: 'user.created', data: {} }, 'msg_6').incoming)).toEqual({
      outcome: 'ignored',
    });
  });
});
