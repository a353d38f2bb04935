import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../../src/config/load.js';
import {
  expectsJsonBody,
  handshakeAfterSignature,
  handshakeBeforeSignature,
  keysOf,
  signatureRuleOf,
  verifyDelivery,
} from '../../../../src/webhooks/signature/verify.js';
import { MINIMAL_CONFIG } from '../../../support/minimal-config.js';

const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;

const webhooks = (extra: object) =>
  parseConfig({ ...MINIMAL_CONFIG, webhooks: { enabled: true, ...extra } }, {}).webhooks;

describe('the signature rule (verify.ts)', () => {
  it('decodes each secret the way its scheme reads it: whsec_ for Standard Webhooks, UTF-8 for HMAC', () => {
    expect(keysOf('standard-webhooks', [SECRET])).toEqual([Buffer.alloc(32, 7)]);
    expect(keysOf('hmac', ['shared'])).toEqual([Buffer.from('shared')]);
  });

  it('names a secret the scheme cannot use by its position, never by its value', () => {
    expect(() => keysOf('standard-webhooks', [SECRET, 'whsec_!!not-base64!!'])).toThrow(
      /^webhook secret #2: /,
    );
    expect(() => keysOf('standard-webhooks', ['whsec_!!not-base64!!'])).not.toThrow(/not-base64/);
  });

  it('reads a JWT secret as text by default, and refuses an ed25519 public key it cannot read by its position', () => {
    const jwt = signatureRuleOf(
      webhooks({ signature: { scheme: 'jwt' }, replay: { waiveProtection: true } }).signature,
      ['s3cr3t'],
      true,
    );
    expect(jwt.scheme === 'jwt' && jwt.keys).toEqual([Buffer.from('s3cr3t')]);
    expect(jwt.scheme === 'jwt' && jwt.jwt.requireIssuedAt).toBe(false);
    const ed25519 = webhooks({
      signature: { scheme: 'ed25519' },
      replay: { waiveProtection: true },
    }).signature;
    expect(() => signatureRuleOf(ed25519, ['not a key'], true)).toThrow(/^webhook secret #1: /);
  });

  it('reads any content type only when the whole body is a JWT', () => {
    const body = signatureRuleOf(
      webhooks({ signature: { scheme: 'jwt', jwt: { location: 'body' } } }).signature,
      ['s3cr3t'],
      false,
    );
    expect(expectsJsonBody(body)).toBe(false);
    expect(expectsJsonBody(signatureRuleOf(webhooks({}).signature, [SECRET], false))).toBe(true);
  });

  it('answers a handshake only for the challenge configured, and never with signatures off', () => {
    const ringcentral = signatureRuleOf(
      webhooks({
        signature: { scheme: 'token', challenge: 'ringcentral' },
        replay: { waiveProtection: true },
      }).signature,
      ['s3cr3t'],
      true,
    );
    expect(handshakeBeforeSignature(ringcentral, { 'validation-token': 'abc' })).toEqual({
      status: 200,
      headers: { 'validation-token': 'abc' },
      body: '',
    });
    const plain = signatureRuleOf(webhooks({}).signature, [SECRET], false);
    expect(handshakeBeforeSignature(plain, { 'validation-token': 'abc' })).toBeNull();
    const slackBody = Buffer.from(JSON.stringify({ type: 'url_verification', challenge: 'xyz' }));
    expect(handshakeAfterSignature(plain, slackBody)).toBeNull();
    expect(handshakeAfterSignature({ scheme: 'none' }, slackBody)).toBeNull();
  });

  it('accepts every delivery, keyed by nothing, only when signatures are off', async () => {
    expect(
      await verifyDelivery({ scheme: 'none' }, { headers: {}, body: Buffer.alloc(0), nowMs: 0 }),
    ).toEqual({
      ok: true,
      replayKey: null,
      timestampMs: null,
    });
    const plain = signatureRuleOf(webhooks({}).signature, [SECRET], false);
    expect(await verifyDelivery(plain, { headers: {}, body: Buffer.alloc(0), nowMs: 0 })).toMatchObject({
      ok: false,
      reason: 'unsigned',
    });
  });
});
