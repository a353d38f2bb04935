import { describe, expect, it } from 'vitest';
import {
  standardWebhooksKey,
  standardWebhooksSignature,
  verifyStandardWebhooks,
} from '../../../../src/webhooks/signature/standard-webhooks.js';

// The test vector the Standard Webhooks reference libraries publish (standard-webhooks, svix: "test_verify").
const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};
const TOLERANCE = 5 * 60_000;
const key = standardWebhooksKey(VECTOR.secret);

function delivery(
  headers: Record<string, string | string[]>,
  overrides: { body?: string; nowMs?: number } = {},
) {
  return {
    headers,
    body: Buffer.from(overrides.body ?? VECTOR.body),
    nowMs: overrides.nowMs ?? VECTOR.timestamp * 1000,
  };
}

const signed = (signature = VECTOR.signature) => ({
  'webhook-id': VECTOR.id,
  'webhook-timestamp': String(VECTOR.timestamp),
  'webhook-signature': signature,
});

describe('Standard Webhooks signatures', () => {
  it('computes the published test vector', () => {
    expect(standardWebhooksSignature(key, VECTOR.id, VECTOR.timestamp, Buffer.from(VECTOR.body))).toBe(
      VECTOR.signature,
    );
  });

  it('accepts the published test vector, keyed by its webhook-id', () => {
    expect(verifyStandardWebhooks(delivery(signed()), [key], TOLERANCE)).toEqual({
      ok: true,
      replayKey: `id:${VECTOR.id}`,
      timestampMs: VECTOR.timestamp * 1000,
    });
  });

  it('refuses a body changed by one byte, since the raw bytes are signed', () => {
    const verdict = verifyStandardWebhooks(
      delivery(signed(), { body: '{"test": 2432232315}' }),
      [key],
      TOLERANCE,
    );
    expect(verdict).toMatchObject({ ok: false, reason: 'bad_signature' });
  });

  it('refuses the same JSON re-serialized without its space', () => {
    const verdict = verifyStandardWebhooks(
      delivery(signed(), { body: '{"test":2432232314}' }),
      [key],
      TOLERANCE,
    );
    expect(verdict).toMatchObject({ ok: false, reason: 'bad_signature' });
  });

  it('calls a delivery without a webhook-signature header unsigned', () => {
    const { 'webhook-signature': _, ...headers } = signed();
    expect(verifyStandardWebhooks(delivery(headers), [key], TOLERANCE)).toMatchObject({
      ok: false,
      reason: 'unsigned',
    });
  });

  it('refuses a signature without its id or timestamp, or with a timestamp that is not Unix seconds', () => {
    const { 'webhook-id': _, ...noId } = signed();
    expect(verifyStandardWebhooks(delivery(noId), [key], TOLERANCE)).toMatchObject({
      reason: 'bad_signature',
    });
    expect(
      verifyStandardWebhooks(
        delivery({ ...signed(), 'webhook-timestamp': '2021-02-25T15:02:10Z' }),
        [key],
        TOLERANCE,
      ),
    ).toMatchObject({ reason: 'bad_signature' });
  });

  it('refuses a repeated signature header rather than choosing one of its values', () => {
    const headers = { ...signed(), 'webhook-signature': [VECTOR.signature, VECTOR.signature] };
    expect(verifyStandardWebhooks(delivery(headers), [key], TOLERANCE)).toMatchObject({
      reason: 'bad_signature',
    });
  });

  it('refuses a signature made with another secret', () => {
    const other = standardWebhooksKey(`whsec_${Buffer.alloc(32, 7).toString('base64')}`);
    expect(verifyStandardWebhooks(delivery(signed()), [other], TOLERANCE)).toMatchObject({
      reason: 'bad_signature',
    });
  });

  it('accepts during a rotation: any of several secrets, any of several signatures, unknown versions skipped', () => {
    const old = standardWebhooksKey(`whsec_${Buffer.alloc(32, 1).toString('base64')}`);
    const header = `v2,AAAA v1,${Buffer.alloc(32).toString('base64')} ${VECTOR.signature}`;
    expect(verifyStandardWebhooks(delivery(signed(header)), [old, key], TOLERANCE)).toMatchObject({
      ok: true,
    });
    expect(verifyStandardWebhooks(delivery(signed(header)), [key, old], TOLERANCE)).toMatchObject({
      ok: true,
    });
    expect(verifyStandardWebhooks(delivery(signed('v2,AAAA')), [key], TOLERANCE)).toMatchObject({
      reason: 'bad_signature',
    });
  });

  it('accepts a timestamp up to the tolerance away either way, and calls one beyond it stale', () => {
    const at = VECTOR.timestamp * 1000;
    for (const nowMs of [at - TOLERANCE, at + TOLERANCE])
      expect(verifyStandardWebhooks(delivery(signed(), { nowMs }), [key], TOLERANCE).ok).toBe(true);
    for (const nowMs of [at - TOLERANCE - 1, at + TOLERANCE + 1])
      expect(verifyStandardWebhooks(delivery(signed(), { nowMs }), [key], TOLERANCE)).toMatchObject({
        reason: 'stale_timestamp',
      });
  });

  it('calls a forged delivery with an old timestamp a bad signature, not stale: the signature is checked first', () => {
    const verdict = verifyStandardWebhooks(
      delivery(signed('v1,' + Buffer.alloc(32).toString('base64')), { nowMs: 0 }),
      [key],
      TOLERANCE,
    );
    expect(verdict).toMatchObject({ reason: 'bad_signature' });
  });

  it('reads secrets with or without the whsec_ prefix and refuses what is not a base64 key, without echoing it', () => {
    expect(standardWebhooksKey('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')).toEqual(key);
    expect(() => standardWebhooksKey('whsec_not base64!')).toThrow(/whsec_ followed by base64/);
    expect(() => standardWebhooksKey('whsec_c2hvcnQ=')).toThrow(/at least 16 bytes/);
    try {
      standardWebhooksKey('whsec_s3cr3t-value!');
    } catch (error) {
      expect((error as Error).message).not.toContain('s3cr3t');
    }
  });
});
