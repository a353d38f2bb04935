import { generateKeyPairSync, sign, verify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ed25519PublicKey, secretKey } from '../../../../src/webhooks/signature/keys.js';

describe('secret encodings', () => {
  it('decodes utf8, hex, base64 and whsec_ secrets to their key bytes', () => {
    expect(secretKey('whsec_abc', 'utf8')).toEqual(Buffer.from('whsec_abc'));
    expect(secretKey('00ff10', 'hex')).toEqual(Buffer.from([0, 255, 16]));
    expect(secretKey('AAEC', 'base64')).toEqual(Buffer.from([0, 1, 2]));
    expect(secretKey(`whsec_${Buffer.alloc(16, 9).toString('base64')}`, 'standard-webhooks')).toEqual(
      Buffer.alloc(16, 9),
    );
  });

  it('refuses a secret not in its encoding without echoing it', () => {
    for (const [secret, encoding] of [
      ['not-hex-secret', 'hex'],
      ['not base64 secret!', 'base64'],
      ['whsec_c2hvcnQ=', 'standard-webhooks'],
      ['', 'utf8'],
    ] as const) {
      let message = '';
      try {
        secretKey(secret, encoding);
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).not.toBe('');
      if (secret !== '') expect(message).not.toContain(secret);
    }
  });

  it('reads an ed25519 public key as whpk_, base64, hex or PEM, and refuses anything else', () => {
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x ?? '', 'base64url');
    const signature = sign(null, Buffer.from('m'), privateKey);
    for (const key of [
      ed25519PublicKey(`whpk_${raw.toString('base64')}`, 'base64'),
      ed25519PublicKey(raw.toString('base64'), 'base64'),
      ed25519PublicKey(raw.toString('hex'), 'hex'),
      ed25519PublicKey(publicKey.export({ format: 'pem', type: 'spki' }).toString(), 'base64'),
    ])
      expect(verify(null, Buffer.from('m'), key, signature)).toBe(true);
    expect(() => ed25519PublicKey(Buffer.alloc(31).toString('base64'), 'base64')).toThrow(/32 bytes/);
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey;
    expect(() => ed25519PublicKey(rsa.export({ format: 'pem', type: 'spki' }).toString(), 'base64')).toThrow(
      RangeError,
    );
  });
});
