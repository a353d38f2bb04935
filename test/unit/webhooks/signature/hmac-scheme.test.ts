import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  hmacSignature,
  hmacSignatureOf,
  verifyHmac,
  type HmacScheme,
} from '../../../../src/webhooks/signature/hmac-scheme.js';

const TOLERANCE = 60_000;
const body = Buffer.from('{"type":"call.updated","data":{"uid":"c1"}}');
const key = Buffer.from('It’s a Secret to Everybody');

/** GitHub's X-Hub-Signature-256 shape. */
const github: HmacScheme = {
  header: 'x-hub-signature-256',
  algorithm: 'sha256',
  encoding: 'hex',
  prefix: 'sha256=',
  signedContent: 'body',
  timestampUnit: 'seconds',
  separator: '.',
};

describe('configurable HMAC signatures', () => {
  it("verifies GitHub's published example (sha256= hex over the body)", () => {
    // From GitHub's docs "Validating webhook deliveries": secret "It's a Secret to Everybody", payload "Hello, World!".
    const secret = Buffer.from("It's a Secret to Everybody");
    const helloWorld = Buffer.from('Hello, World!');
    const headers = {
      'x-hub-signature-256': 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17',
    };
    expect(verifyHmac(github, { headers, body: helloWorld, nowMs: 0 }, [secret], TOLERANCE)).toMatchObject({
      ok: true,
      timestampMs: null,
    });
  });

  it('keys a delivery without an id header by a hash of its signature, never the signature itself', () => {
    const signature = hmacSignature(github, key, body);
    const verdict = verifyHmac(
      github,
      { headers: { 'x-hub-signature-256': signature }, body, nowMs: 0 },
      [key],
      TOLERANCE,
    );
    expect(verdict.ok && verdict.replayKey).toMatch(/^sig:/);
    expect(verdict.ok && verdict.replayKey).not.toContain(signature.slice(7));
  });

  it('keys a delivery by its id header only when the signed content includes it', () => {
    const scheme = { ...github, idHeader: 'x-delivery', signedContent: '{id}.{body}' };
    const headers = {
      'x-hub-signature-256': hmacSignatureOf(scheme, key, Buffer.concat([Buffer.from('d-1.'), body])),
      'x-delivery': 'd-1',
    };
    expect(verifyHmac(scheme, { headers, body, nowMs: 0 }, [key], TOLERANCE)).toMatchObject({
      replayKey: 'id:d-1',
    });
    // The signed id cannot be swapped for a fresh one.
    const reidentified = { ...headers, 'x-delivery': 'd-2' };
    expect(verifyHmac(scheme, { headers: reidentified, body, nowMs: 0 }, [key], TOLERANCE)).toMatchObject({
      reason: 'bad_signature',
    });
  });

  it('keys a captured delivery resent with a fresh unsigned id as the same delivery', () => {
    const scheme = { ...github, idHeader: 'x-github-delivery' };
    const signature = hmacSignature(scheme, key, body);
    const keyOf = (id: string) => {
      const verdict = verifyHmac(
        scheme,
        { headers: { 'x-hub-signature-256': signature, 'x-github-delivery': id }, body, nowMs: 0 },
        [key],
        TOLERANCE,
      );
      return verdict.ok ? verdict.replayKey : verdict.reason;
    };
    expect(keyOf('72d3162e-cc78-11e3-81ab-4c9367dc0958')).toMatch(/^sig:/);
    expect(keyOf('a-fresh-id-each-time')).toBe(keyOf('72d3162e-cc78-11e3-81ab-4c9367dc0958'));
  });

  it('verifies base64 over timestamp.body with a millisecond timestamp, within the tolerance only', () => {
    const scheme: HmacScheme = {
      header: 'x-signature',
      algorithm: 'sha512',
      encoding: 'base64',
      prefix: '',
      signedContent: 'timestamp.body',
      timestampHeader: 'x-timestamp',
      timestampUnit: 'milliseconds',
      separator: ':',
    };
    const at = 1_700_000_000_123;
    const expected = createHmac('sha512', key).update(`${at}:`).update(body).digest('base64');
    expect(hmacSignature(scheme, key, body, String(at))).toBe(expected);
    const headers = { 'x-signature': expected, 'x-timestamp': String(at) };
    expect(verifyHmac(scheme, { headers, body, nowMs: at + TOLERANCE }, [key], TOLERANCE)).toMatchObject({
      ok: true,
      timestampMs: at,
    });
    expect(verifyHmac(scheme, { headers, body, nowMs: at + TOLERANCE + 1 }, [key], TOLERANCE)).toMatchObject({
      reason: 'stale_timestamp',
    });
    // The timestamp is signed: moving it forward breaks the signature.
    const moved = { ...headers, 'x-timestamp': String(at + 1) };
    expect(verifyHmac(scheme, { headers: moved, body, nowMs: at }, [key], TOLERANCE)).toMatchObject({
      reason: 'bad_signature',
    });
    const { 'x-timestamp': _, ...noTimestamp } = headers;
    expect(verifyHmac(scheme, { headers: noTimestamp, body, nowMs: at }, [key], TOLERANCE)).toMatchObject({
      reason: 'bad_signature',
    });
  });

  it('reads a Stripe-like header (t=…,v1=…) with prefix v1= and accepts any of several signatures and secrets', () => {
    const scheme = { ...github, header: 'x-sig', prefix: 'v1=' };
    const old = Buffer.from('old secret');
    const sig = hmacSignature(scheme, key, body);
    const headers = { 'x-sig': `t=1,v1=${'0'.repeat(64)},${sig}` };
    expect(verifyHmac(scheme, { headers, body, nowMs: 0 }, [old, key], TOLERANCE).ok).toBe(true);
    expect(verifyHmac(scheme, { headers, body, nowMs: 0 }, [old], TOLERANCE)).toMatchObject({
      reason: 'bad_signature',
    });
  });

  it('calls a missing header unsigned, and a signature without the prefix or not hex a bad signature', () => {
    expect(verifyHmac(github, { headers: {}, body, nowMs: 0 }, [key], TOLERANCE)).toMatchObject({
      reason: 'unsigned',
    });
    const bare = hmacSignature(github, key, body).slice('sha256='.length);
    for (const value of [bare, 'sha256=', `sha256=${'z'.repeat(64)}`])
      expect(
        verifyHmac(github, { headers: { 'x-hub-signature-256': value }, body, nowMs: 0 }, [key], TOLERANCE),
      ).toMatchObject({ reason: 'bad_signature' });
  });
});
