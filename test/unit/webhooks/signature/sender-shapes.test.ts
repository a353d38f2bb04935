/**
 * Every sender shape of docs/webhooks.md ("Ready configurations, per sender"), read from the doc itself: each
 * configuration verifies the sender's published example where there is one, else a delivery signed here
 * independently (node:crypto, never the verifier's code), and refuses the same delivery forged, re-identified
 * or stale. The replay key of a replayed delivery is the one of the first.
 */
import { createHash, createHmac, generateKeyPairSync, sign } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { SignatureVerdict } from '../../../../src/webhooks/signature/verdict.js';
import { signatureRuleOf, verifyDelivery } from '../../../../src/webhooks/signature/verify.js';
import { DOCUMENTED_SHAPES, shapeSettings } from '../../../support/webhook-shapes.js';

const TOLERANCE = 5 * 60_000;

function ruleFor(name: string, secrets: string[]) {
  const webhooks = shapeSettings(name);
  return signatureRuleOf(webhooks.signature, secrets, webhooks.replay.waiveProtection);
}

type Headers = Record<string, string>;
interface Delivery {
  headers: Headers;
  body: string | Buffer;
  nowMs: number;
  target?: string;
}

async function verdict(name: string, secrets: string[], d: Delivery): Promise<SignatureVerdict> {
  return verifyDelivery(ruleFor(name, secrets), { ...d, body: Buffer.from(d.body) });
}

const hex = (key: string | Buffer, content: string | Buffer, algorithm = 'sha256') =>
  createHmac(algorithm, key).update(content).digest('hex');
const b64 = (key: string | Buffer, content: string | Buffer, algorithm = 'sha256') =>
  createHmac(algorithm, key).update(content).digest('base64');

const BODY = '{"type":"call.updated","data":{"uid":"c1","locationUid":"l1"}}';
const NOW = 1_767_000_000_000;
const T = Math.floor(NOW / 1000);

/** The verdict is ok, and its replay key. */
async function accepted(name: string, secrets: string[], d: Delivery): Promise<string | null> {
  const v = await verdict(name, secrets, d);
  expect(v).toMatchObject({ ok: true });
  return v.ok ? v.replayKey : null;
}
async function refused(name: string, secrets: string[], d: Delivery): Promise<string> {
  const v = await verdict(name, secrets, d);
  expect(v.ok).toBe(false);
  return v.ok ? 'accepted' : v.reason;
}

describe('the ready configuration of each sender in docs/webhooks.md', () => {
  it('documents every sender of the ecosystem table, each tested below', () => {
    expect(DOCUMENTED_SHAPES).toEqual([
      'github',
      'shopify',
      'stripe',
      'slack',
      'zoom',
      'svix',
      'standard-webhooks',
      'telnyx',
      'dialpad',
      'vonage',
      'aircall',
      'ringcentral',
      'twilio',
    ]);
  });

  it('GitHub: verifies the published example; a fresh X-GitHub-Delivery is the same delivery', async () => {
    // GitHub's docs, "Validating webhook deliveries".
    const secret = "It's a Secret to Everybody";
    const headers = {
      'x-hub-signature-256': 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17',
      'x-github-delivery': 'a',
    };
    const first = await accepted('github', [secret], { headers, body: 'Hello, World!', nowMs: NOW });
    const again = await accepted('github', [secret], {
      headers: { ...headers, 'x-github-delivery': 'b' },
      body: 'Hello, World!',
      nowMs: NOW,
    });
    expect(again).toBe(first);
    expect(await refused('github', ['another'], { headers, body: 'Hello, World!', nowMs: NOW })).toBe(
      'bad_signature',
    );
  });

  it('Shopify: base64 HMAC of the body', async () => {
    const headers = { 'x-shopify-hmac-sha256': b64('shpss_secret', BODY) };
    await accepted('shopify', ['shpss_secret'], { headers, body: BODY, nowMs: NOW });
    expect(await refused('shopify', ['shpss_secret'], { headers, body: `${BODY} `, nowMs: NOW })).toBe(
      'bad_signature',
    );
  });

  it('Stripe: t= and several v1= in one header over {t}.{body}, the whsec_ secret used as text, stale after the tolerance', async () => {
    const secret = 'whsec_test_secret';
    const header = (t: number, key = secret) =>
      `t=${t},v1=${hex('whsec_rolled_off', `${t}.${BODY}`)},v1=${hex(key, `${t}.${BODY}`)},v0=ignored`;
    const d = { headers: { 'stripe-signature': header(T) }, body: BODY, nowMs: NOW };
    const first = await accepted('stripe', [secret], d);
    // The same capture verified under the rotated-out secret is still the same delivery.
    expect(await accepted('stripe', ['whsec_rolled_off'], d)).toBe(first);
    expect(await refused('stripe', [secret], { ...d, nowMs: NOW + TOLERANCE + 1_000 })).toBe(
      'stale_timestamp',
    );
    // Moving t forward breaks the signature.
    const moved = header(T).replace(`t=${T}`, `t=${T + 60}`);
    expect(await refused('stripe', [secret], { ...d, headers: { 'stripe-signature': moved } })).toBe(
      'bad_signature',
    );
    expect(
      await refused('stripe', [secret], { ...d, headers: { 'stripe-signature': header(T, 'forged') } }),
    ).toBe('bad_signature');
  });

  it("Slack: verifies the published example basestring's signature", async () => {
    // Slack's docs, "Verifying requests from Slack".
    const body =
      'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&' +
      'channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&' +
      'response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&' +
      'trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c';
    const headers = {
      'x-slack-request-timestamp': '1531420618',
      'x-slack-signature': 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503',
    };
    const secret = '8f742231b10e8888abcd99yyyzzz85a5';
    await accepted('slack', [secret], { headers, body, nowMs: 1531420618_000 });
    expect(await refused('slack', [secret], { headers, body, nowMs: 1531420618_000 + TOLERANCE + 1 })).toBe(
      'stale_timestamp',
    );
  });

  it('Zoom: v0= over v0:{ts}:{body}', async () => {
    const headers = {
      'x-zm-request-timestamp': String(T),
      'x-zm-signature': `v0=${hex('zoom', `v0:${T}:${BODY}`)}`,
    };
    await accepted('zoom', ['zoom'], { headers, body: BODY, nowMs: NOW });
    expect(
      await refused('zoom', ['zoom'], {
        headers: { ...headers, 'x-zm-request-timestamp': String(T + 1) },
        body: BODY,
        nowMs: NOW,
      }),
    ).toBe('bad_signature');
  });

  it('Svix-branded (Clerk): the published Standard Webhooks vector under svix-* headers', async () => {
    const headers = {
      'svix-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
      'svix-timestamp': '1614265330',
      'svix-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    };
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    expect(
      await accepted('svix', [secret], { headers, body: '{"test": 2432232314}', nowMs: 1614265330_000 }),
    ).toBe('id:msg_p5jXN8AQM9LWM0D4loKWxJek');
    const renamed = Object.fromEntries(
      Object.entries(headers).map(([k, v]) => [k.replace('svix', 'webhook'), v]),
    );
    expect(
      await refused('svix', [secret], {
        headers: renamed,
        body: '{"test": 2432232314}',
        nowMs: 1614265330_000,
      }),
    ).toBe('unsigned');
  });

  it('Standard Webhooks v1a: ed25519 with the whpk_ public key, beside a v1 secret', async () => {
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x ?? '', 'base64url');
    const whpk = `whpk_${raw.toString('base64')}`;
    const whsec = `whsec_${Buffer.alloc(24, 7).toString('base64')}`;
    const id = 'msg_1';
    const content = Buffer.from(`${id}.${T}.${BODY}`);
    const headers = {
      'webhook-id': id,
      'webhook-timestamp': String(T),
      'webhook-signature': `v1a,${sign(null, content, privateKey).toString('base64')}`,
    };
    expect(await accepted('standard-webhooks', [whsec, whpk], { headers, body: BODY, nowMs: NOW })).toBe(
      'id:msg_1',
    );
    const other = generateKeyPairSync('ed25519').privateKey;
    const forged = {
      ...headers,
      'webhook-signature': `v1a,${sign(null, content, other).toString('base64')}`,
    };
    expect(
      await refused('standard-webhooks', [whsec, whpk], { headers: forged, body: BODY, nowMs: NOW }),
    ).toBe('bad_signature');
  });

  it('Telnyx-like ed25519 over {timestamp}|{body}, with a base64 public key', async () => {
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const key = Buffer.from(publicKey.export({ format: 'jwk' }).x ?? '', 'base64url').toString('base64');
    const headers = {
      'telnyx-timestamp': String(T),
      'telnyx-signature-ed25519': sign(null, Buffer.from(`${T}|${BODY}`), privateKey).toString('base64'),
    };
    await accepted('telnyx', [key], { headers, body: BODY, nowMs: NOW });
    expect(await refused('telnyx', [key], { headers, body: BODY, nowMs: NOW + TOLERANCE + 1_000 })).toBe(
      'stale_timestamp',
    );
    expect(
      await refused('telnyx', [key], {
        headers: { ...headers, 'telnyx-timestamp': String(T - 1) },
        body: BODY,
        nowMs: NOW,
      }),
    ).toBe('bad_signature');
  });

  it('Dialpad: the body is an HS256 JWT whose claims the mapping reads', async () => {
    const jwt = hs256('dialpad-secret', { type: 'call.updated', data: { uid: 'c1' }, iat: T, exp: T + 60 });
    const v = await verdict('dialpad', ['dialpad-secret'], { headers: {}, body: jwt, nowMs: NOW });
    expect(v).toMatchObject({ ok: true, timestampMs: T * 1000 });
    expect(v.ok && JSON.parse(Buffer.from(v.payload ?? []).toString())).toMatchObject({
      data: { uid: 'c1' },
    });
    expect(await refused('dialpad', ['another'], { headers: {}, body: jwt, nowMs: NOW })).toBe(
      'bad_signature',
    );
    expect(
      await refused('dialpad', ['dialpad-secret'], {
        headers: {},
        body: jwt,
        nowMs: NOW + TOLERANCE + 120_000,
      }),
    ).toBe('stale_timestamp');
    const unsigned = `${jwt
      .split('.')
      .slice(0, 2)
      .join('.')
      .replace(/^[^.]+/, b64url({ alg: 'none' }))}.`;
    expect(await refused('dialpad', ['dialpad-secret'], { headers: {}, body: unsigned, nowMs: NOW })).toBe(
      'bad_signature',
    );
  });

  it('Vonage: a Bearer JWT in Authorization whose payload_hash signs the body, keyed by its jti', async () => {
    const payloadHash = createHash('sha256').update(BODY).digest('hex');
    const jwt = hs256('vonage-secret', { iat: T, jti: 'j-1', iss: 'Vonage', payload_hash: payloadHash });
    const headers = { authorization: `Bearer ${jwt}` };
    expect(await accepted('vonage', ['vonage-secret'], { headers, body: BODY, nowMs: NOW })).toBe('id:j-1');
    expect(
      await refused('vonage', ['vonage-secret'], { headers, body: BODY.replace('c1', 'c2'), nowMs: NOW }),
    ).toBe('bad_signature');
    const noIat = hs256('vonage-secret', { jti: 'j-2', payload_hash: payloadHash });
    expect(
      await refused('vonage', ['vonage-secret'], {
        headers: { authorization: `Bearer ${noIat}` },
        body: BODY,
        nowMs: NOW,
      }),
    ).toBe('bad_signature');
  });

  it('Aircall: a token field in the body, compared whole', async () => {
    const body = JSON.stringify({ event: 'call.ended', token: 'aircall-token', data: { id: 1 } });
    await accepted('aircall', ['aircall-token'], { headers: {}, body, nowMs: NOW });
    expect(
      await refused('aircall', ['aircall-token'], {
        headers: {},
        body: body.replace('aircall-token', 'aircall-toke'),
        nowMs: NOW,
      }),
    ).toBe('bad_signature');
    expect(await refused('aircall', ['aircall-token'], { headers: {}, body: BODY, nowMs: NOW })).toBe(
      'unsigned',
    );
  });

  it('RingCentral: the Verification-Token header', async () => {
    await accepted('ringcentral', ['rc-token'], {
      headers: { 'verification-token': 'rc-token' },
      body: BODY,
      nowMs: NOW,
    });
    expect(
      await refused('ringcentral', ['rc-token'], {
        headers: { 'verification-token': 'nope' },
        body: BODY,
        nowMs: NOW,
      }),
    ).toBe('bad_signature');
  });

  it('Twilio (JSON): base64 HMAC-SHA1 of the public URL, whose bodySHA256 must match the body', async () => {
    const target = `/webhooks/calls?bodySHA256=${createHash('sha256').update(BODY).digest('hex')}`;
    const url = `https://hooks.example.com${target}`;
    const headers = { 'x-twilio-signature': b64('twilio-token', url, 'sha1') };
    await accepted('twilio', ['twilio-token'], { headers, body: BODY, nowMs: NOW, target });
    expect(await refused('twilio', ['twilio-token'], { headers, body: `${BODY} `, nowMs: NOW, target })).toBe(
      'bad_signature',
    );
    expect(
      await refused('twilio', ['twilio-token'], {
        headers,
        body: BODY,
        nowMs: NOW,
        target: target.replace('calls', 'other'),
      }),
    ).toBe('bad_signature');
  });
});

function b64url(value: object): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/** An HS256 JWT computed here with node:crypto, independently of the verifier's library. */
function hs256(secret: string, claims: object): string {
  const input = `${b64url({ alg: 'HS256', typ: 'JWT' })}.${b64url(claims)}`;
  return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
}
