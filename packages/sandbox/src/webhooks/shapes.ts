/**
 * The signature shapes the sandbox's sender can sign in, one per sender of the ecosystem (the connector's
 * docs/webhooks.md has a ready configuration for each): the sender's side, so that tests and the bench show a
 * receiver configured for a shape accepting genuine deliveries and refusing forged and replayed ones. A
 * workspace package shares no code with the product: these few lines are the sandbox's own, written from
 * each sender's documentation.
 *
 * Each shape turns one attempt (id, timestamp, body, target URL) into the request to send: its headers, its
 * body (a JWT for Dialpad, the token added for Aircall) and its URL (Twilio's carries `bodySHA256`).
 * `verificationSecret` is what the receiver is configured with: the shared secret, or the public key of an
 * ed25519 shape.
 */
import { createHash, createHmac, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { newWebhookSecret, webhookKey } from './signing.js';

export const WEBHOOK_SHAPES = [
  'standard-webhooks',
  'standard-webhooks-v1a',
  'svix',
  'github',
  'shopify',
  'stripe',
  'slack',
  'zoom',
  'telnyx',
  'dialpad',
  'vonage',
  'aircall',
  'ringcentral',
  'twilio',
] as const;
export type WebhookShape = (typeof WEBHOOK_SHAPES)[number];

export interface Attempt {
  id: string;
  timestampSeconds: number;
  /** The event, JSON. */
  body: string;
  /** The target URL as registered. */
  url: string;
  /** Signed with a wrong key (a forgery). */
  forged: boolean;
}

export interface SignedRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
  /** The header a shape names the delivery by (unsigned for some shapes), if it has one. */
  idHeader?: string;
}

export interface ShapeSigner {
  readonly shape: WebhookShape;
  /** What the receiver verifies with (secret, or public key); also the signing secret of symmetric shapes. */
  readonly verificationSecret: string;
  sign(attempt: Attempt): SignedRequest;
}

/** A signer for `shape`; `secret` is the shared secret of a symmetric shape (default: a fresh one). */
export function shapeSigner(shape: WebhookShape, secret?: string): ShapeSigner {
  if (shape === 'standard-webhooks-v1a' || shape === 'telnyx') {
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const wrong = generateKeyPairSync('ed25519').privateKey;
    const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x ?? '', 'base64url').toString('base64');
    return {
      shape,
      verificationSecret: shape === 'telnyx' ? raw : `whpk_${raw}`,
      sign: (a) => asymmetric(shape, a.forged ? wrong : privateKey, a),
    };
  }
  const shared = secret ?? defaultSecret(shape);
  const key =
    shape === 'standard-webhooks' || shape === 'svix' ? webhookKey(shared) : Buffer.from(shared, 'utf8');
  const wrong = Buffer.from(key).reverse();
  return {
    shape,
    verificationSecret: shared,
    sign: (a) => symmetric(shape, a.forged ? wrong : key, a, shared),
  };
}

function defaultSecret(shape: WebhookShape): string {
  if (shape === 'standard-webhooks' || shape === 'svix') return newWebhookSecret();
  if (shape === 'stripe') return `whsec_${randomBytes(24).toString('hex')}`;
  return randomBytes(24).toString('hex');
}

const hmac = (algorithm: string, key: Uint8Array, content: string) =>
  createHmac(algorithm, key).update(content);

function symmetric(shape: WebhookShape, key: Buffer, a: Attempt, secret: string): SignedRequest {
  const t = a.timestampSeconds;
  const plain = { url: a.url, body: a.body };
  switch (shape) {
    case 'standard-webhooks':
    case 'svix': {
      const p = shape === 'svix' ? 'svix' : 'webhook';
      const signature = hmac('sha256', key, `${a.id}.${t}.${a.body}`).digest('base64');
      return {
        ...plain,
        idHeader: `${p}-id`,
        headers: { [`${p}-id`]: a.id, [`${p}-timestamp`]: String(t), [`${p}-signature`]: `v1,${signature}` },
      };
    }
    case 'github':
      return {
        ...plain,
        idHeader: 'x-github-delivery',
        headers: {
          'x-github-delivery': a.id,
          'x-hub-signature-256': `sha256=${hmac('sha256', key, a.body).digest('hex')}`,
        },
      };
    case 'shopify':
      return {
        ...plain,
        idHeader: 'x-shopify-webhook-id',
        headers: {
          'x-shopify-webhook-id': a.id,
          'x-shopify-hmac-sha256': hmac('sha256', key, a.body).digest('base64'),
        },
      };
    case 'stripe':
      return {
        ...plain,
        headers: { 'stripe-signature': `t=${t},v1=${hmac('sha256', key, `${t}.${a.body}`).digest('hex')}` },
      };
    case 'slack':
    case 'zoom': {
      const [ts, sig] =
        shape === 'slack'
          ? ['x-slack-request-timestamp', 'x-slack-signature']
          : ['x-zm-request-timestamp', 'x-zm-signature'];
      return {
        ...plain,
        headers: { [ts]: String(t), [sig]: `v0=${hmac('sha256', key, `v0:${t}:${a.body}`).digest('hex')}` },
      };
    }
    case 'dialpad': {
      const claims = { ...(JSON.parse(a.body) as object), iat: t, exp: t + 60 };
      return { url: a.url, headers: { 'content-type': 'application/jwt' }, body: hs256(key, claims) };
    }
    case 'vonage': {
      const claims = {
        iat: t,
        jti: a.id,
        iss: 'Vonage',
        payload_hash: createHash('sha256').update(a.body).digest('hex'),
      };
      return { ...plain, headers: { authorization: `Bearer ${hs256(key, claims)}` } };
    }
    case 'aircall': {
      const token = a.forged ? 'forged-token' : secret;
      return { url: a.url, headers: {}, body: JSON.stringify({ ...(JSON.parse(a.body) as object), token }) };
    }
    case 'ringcentral':
      return { ...plain, headers: { 'verification-token': a.forged ? 'forged-token' : secret } };
    case 'twilio': {
      const url = new URL(a.url);
      url.searchParams.set('bodySHA256', createHash('sha256').update(a.body).digest('hex'));
      return {
        url: url.toString(),
        body: a.body,
        idHeader: 'i-twilio-idempotency-token',
        headers: {
          'i-twilio-idempotency-token': a.id,
          'x-twilio-signature': hmac('sha1', key, url.toString()).digest('base64'),
        },
      };
    }
    default:
      throw new RangeError(`${shape} is not a shared-secret shape`);
  }
}

function asymmetric(shape: WebhookShape, key: KeyObject, a: Attempt): SignedRequest {
  const t = a.timestampSeconds;
  if (shape === 'telnyx') {
    const signature = sign(null, Buffer.from(`${t}|${a.body}`), key).toString('base64');
    return {
      url: a.url,
      body: a.body,
      headers: { 'telnyx-timestamp': String(t), 'telnyx-signature-ed25519': signature },
    };
  }
  const signature = sign(null, Buffer.from(`${a.id}.${t}.${a.body}`), key).toString('base64');
  return {
    url: a.url,
    body: a.body,
    idHeader: 'webhook-id',
    headers: { 'webhook-id': a.id, 'webhook-timestamp': String(t), 'webhook-signature': `v1a,${signature}` },
  };
}

function hs256(key: Uint8Array, claims: object): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const input = `${part({ alg: 'HS256', typ: 'JWT' })}.${part(claims)}`;
  return `${input}.${createHmac('sha256', key).update(input).digest('base64url')}`;
}
