/**
 * The signature rule a configuration chose, as one function: which keys each scheme reads from the secrets,
 * a secret it cannot use named by position (never by value), and one verdict per delivery whatever the scheme.
 */
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../../src/config/load.js';
import { standardWebhooksSignature } from '../../../../src/webhooks/signature/standard-webhooks.js';
import {
  expectsJsonBody,
  handshakeAfterSignature,
  handshakeBeforeSignature,
  keysOf,
  signatureRuleOf,
  verifyDelivery,
} from '../../../../src/webhooks/signature/verify.js';
import { MINIMAL_CONFIG } from '../../../support/minimal-config.js';

const KEY = Buffer.from('0123456789abcdef0123456789abcdef');
const SECRET = `whsec_${KEY.toString('base64')}`;
const BODY = Buffer.from('{"type":"call.updated","data":{"uid":"c1"}}');
const NOW = 1_767_000_000_000;

function signatureOf(signature: Record<string, unknown> = {}) {
  return parseConfig({ ...MINIMAL_CONFIG, webhooks: { enabled: true, signature } }, {}).webhooks;
}

function signed(key: Buffer, id = 'msg_1', nowMs = NOW) {
  const t = Math.floor(nowMs / 1000);
  return {
    headers: {
      'webhook-id': id,
      'webhook-timestamp': String(t),
      'webhook-signature': standardWebhooksSignature(key, id, t, BODY),
    },
    body: BODY,
    nowMs: NOW,
  };
}

describe('signatureRuleOf', () => {
  it('chooses Standard Webhooks by default, splitting whsec_ secrets from whpk_ public keys', () => {
    const webhooks = signatureOf();
    const publicKey = generateKeyPairSync('ed25519').publicKey.export({ format: 'der', type: 'spki' });
    const whpk = `whpk_${publicKey.subarray(-32).toString('base64')}`;
    const rule = signatureRuleOf(webhooks.signature, [SECRET, whpk], false);
    expect(rule.scheme).toBe('standard-webhooks');
    if (rule.scheme !== 'standard-webhooks') return;
    expect(rule.keys.map((k) => Buffer.from(k))).toEqual([KEY]);
    expect(rule.publicKeys).toHaveLength(1);
  });

  it('names a secret it cannot use by its position, never echoing it', () => {
    const webhooks = signatureOf();
    const bad = 'whsec_c2hvcnQ=';
    const attempt = () => signatureRuleOf(webhooks.signature, [SECRET, bad], false);
    expect(attempt).toThrow(RangeError);
    expect(attempt).toThrow(/webhook secret #2/);
    expect(attempt).not.toThrow(/c2hvcnQ/);
  });

  it('keys an HMAC scheme by the UTF-8 bytes of the secret', () => {
    expect(keysOf('hmac', ['plain secret']).map((k) => Buffer.from(k).toString('utf8'))).toEqual([
      'plain secret',
    ]);
    expect(keysOf('standard-webhooks', [SECRET]).map((k) => Buffer.from(k))).toEqual([KEY]);
  });
});

describe('verifyDelivery', () => {
  const rule = signatureRuleOf(signatureOf().signature, [SECRET], false);

  it('accepts a delivery signed with an active secret, keyed for the replay window by its signed id', async () => {
    const verdict = await verifyDelivery(rule, signed(KEY));
    expect(verdict).toMatchObject({ ok: true, timestampMs: Math.floor(NOW / 1000) * 1000 });
    expect(verdict.ok && verdict.replayKey).toContain('msg_1');
  });

  it('refuses a delivery signed with another key, one without a signature, and one signed too long ago', async () => {
    expect(await verifyDelivery(rule, signed(Buffer.from('another key of thirty-two bytes!')))).toMatchObject(
      {
        ok: false,
        reason: 'bad_signature',
      },
    );
    expect(await verifyDelivery(rule, { headers: {}, body: BODY, nowMs: NOW })).toMatchObject({
      ok: false,
      reason: 'unsigned',
    });
    expect(await verifyDelivery(rule, signed(KEY, 'msg_2', NOW - 3_600_000))).toMatchObject({
      ok: false,
      reason: 'stale_timestamp',
    });
  });

  it('accepts anything, with no replay key, only under the unsigned rule', async () => {
    expect(await verifyDelivery({ scheme: 'none' }, { headers: {}, body: BODY, nowMs: NOW })).toEqual({
      ok: true,
      replayKey: null,
      timestampMs: null,
    });
  });
});

describe('handshakes and body type', () => {
  it('answers no handshake under the unsigned rule and expects a JSON body except for a JWT body', () => {
    expect(handshakeBeforeSignature({ scheme: 'none' }, {})).toBeNull();
    expect(handshakeAfterSignature({ scheme: 'none' }, BODY)).toBeNull();
    expect(expectsJsonBody({ scheme: 'none' })).toBe(true);
    const jwtBody = signatureRuleOf(
      signatureOf({ scheme: 'jwt', jwt: { location: 'body' } }).signature,
      ['k'],
      false,
    );
    expect(expectsJsonBody(jwtBody)).toBe(false);
  });
});
