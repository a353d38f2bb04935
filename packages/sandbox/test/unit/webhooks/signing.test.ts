import { describe, expect, it } from 'vitest';
import { newWebhookSecret, signatureHeaders, webhookKey } from '../../../src/webhooks/signing.js';

describe('webhook signing (Standard Webhooks)', () => {
  it('signs the published test vector', () => {
    const key = webhookKey('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw');
    expect(signatureHeaders(key, 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}')).toEqual(
      {
        'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
        'webhook-timestamp': '1614265330',
        'webhook-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
      },
    );
  });

  it('makes fresh secrets in the whsec_ form that it can read back', () => {
    const a = newWebhookSecret();
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(webhookKey(a)).toHaveLength(24);
    expect(newWebhookSecret()).not.toBe(a);
  });

  it('refuses a secret that is not the base64 of at least 16 bytes', () => {
    for (const secret of ['whsec_short', 'whsec_not base64 at all!!', 'plain-text-secret-value'])
      expect(() => webhookKey(secret)).toThrow(RangeError);
  });
});
