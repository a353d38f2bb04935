import { createHash, createHmac, createPublicKey, verify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { shapeSigner, WEBHOOK_SHAPES } from '../../../src/webhooks/shapes.js';

const attempt = (forged = false) => ({
  id: 'msg_1',
  timestampSeconds: 1_700_000_000,
  body: '{"type":"call.updated","data":{"uid":"c1"}}',
  url: 'http://127.0.0.1:9/webhooks/calls',
  forged,
});

describe('the sandbox signing in a sender shape', () => {
  it('signs each shape differently when forged, and the same way for the same attempt', () => {
    for (const shape of WEBHOOK_SHAPES) {
      const signer = shapeSigner(shape);
      const genuine = signer.sign(attempt());
      expect(signer.sign(attempt()), shape).toEqual(genuine);
      expect(signer.sign(attempt(true)), shape).not.toEqual(genuine);
    }
  });

  it("signs Stripe's way: t= and v1= over {t}.{body}, the secret used as text", () => {
    const signer = shapeSigner('stripe', 'whsec_test');
    const expected = createHmac('sha256', 'whsec_test').update(`1700000000.${attempt().body}`).digest('hex');
    expect(signer.sign(attempt()).headers).toEqual({ 'stripe-signature': `t=1700000000,v1=${expected}` });
  });

  it("signs Twilio's way: the URL with bodySHA256, HMAC-SHA1 in base64", () => {
    const signed = shapeSigner('twilio', 'token').sign(attempt());
    const hash = createHash('sha256').update(attempt().body).digest('hex');
    expect(signed.url).toBe(`http://127.0.0.1:9/webhooks/calls?bodySHA256=${hash}`);
    expect(signed.headers['x-twilio-signature']).toBe(
      createHmac('sha1', 'token').update(signed.url).digest('base64'),
    );
  });

  it('gives the public key of an ed25519 shape as its secret, which verifies its signatures', () => {
    const signer = shapeSigner('standard-webhooks-v1a');
    expect(signer.verificationSecret).toMatch(/^whpk_/);
    const raw = Buffer.from(signer.verificationSecret.slice('whpk_'.length), 'base64');
    const key = createPublicKey({
      key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') },
      format: 'jwk',
    });
    const signature = signer.sign(attempt()).headers['webhook-signature'] ?? '';
    const content = Buffer.from(`msg_1.1700000000.${attempt().body}`);
    expect(verify(null, content, key, Buffer.from(signature.slice('v1a,'.length), 'base64'))).toBe(true);
  });

  it('names the id header of shapes that send one, signed or not', () => {
    expect(shapeSigner('github').sign(attempt()).idHeader).toBe('x-github-delivery');
    expect(shapeSigner('svix').sign(attempt()).idHeader).toBe('svix-id');
    expect(shapeSigner('stripe').sign(attempt()).idHeader).toBeUndefined();
  });
});
