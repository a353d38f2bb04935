/**
 * `webhooks`: the receiver of the calls API's `call.*` webhooks (off by default), which nudges the owning
 * location's poll. Spec 6 shows neither event names, payload shapes, delivery nor signature rules, so each is
 * configuration here, with defaults that match the sandbox (Standard Webhooks, `{type, data: {uid,
 * locationUid}}`); the real API will differ in each of them (docs/webhooks.md says how to map it).
 *
 * Secrets are never in the file: like the token-store key (`oauth.keyEnv` / `oauth.keyFile`), they come from
 * the environment variables named here or from files, several at once while a secret is rotated.
 */
import { z } from 'zod';
import { legacyTemplate, parseTemplate, templateCoverage } from '../../webhooks/signature/template.js';
import { durationMs } from '../duration.js';

const dottedPath = z.string().regex(/^[^.\s]+(\.[^.\s]+)*$/, 'a dotted path such as data.uid');
const headerName = z
  .string()
  .regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, 'an HTTP header name')
  .transform((name) => name.toLowerCase());

/** Where a templated scheme (`hmac`, `ed25519`) finds the signature, what it signs and how it is written. */
const templateFields = {
  header: headerName.default('x-signature'),
  encoding: z.enum(['hex', 'base64']).default('hex'),
  /** Text before each signature in the header, e.g. `sha256=`, `v1=`. */
  prefix: z.string().default(''),
  /**
   * The signed content, a template over `{body}`, `{timestamp}`, `{id}`, `{url}`, `{header.NAME}` and
   * `{field.NAME}` (e.g. `v0:{timestamp}:{body}`); the words `body` and `timestamp.body` (timestamp,
   * `separator`, body) are kept for older configurations.
   */
  signedContent: z
    .string()
    .min(1)
    .default('body')
    .superRefine((template, ctx) => {
      try {
        parseTemplate(legacyTemplate(template, '.'));
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: (error as Error).message });
      }
    }),
  timestampHeader: headerName.optional(),
  /** A `NAME=value` field of the signature header holding the timestamp (Stripe's `t`). */
  timestampField: z
    .string()
    .regex(/^[^\s,=]+$/)
    .optional(),
  timestampUnit: z.enum(['seconds', 'milliseconds']).default('seconds'),
  separator: z.string().default('.'),
  /** Header of the delivery id: it keys the replay window only when the signed content includes it. */
  idHeader: headerName.optional(),
  /** A query parameter of the signed URL holding the hex SHA-256 of the body (Twilio's `bodySHA256`). */
  bodyHashParam: z.string().min(1).optional(),
};

const timestampSourced = (h: {
  signedContent: string;
  timestampHeader?: string | undefined;
  timestampField?: string | undefined;
}): boolean =>
  !/\{timestamp\}/.test(legacyTemplate(h.signedContent, '.')) ||
  h.timestampHeader !== undefined ||
  h.timestampField !== undefined;
const timestampSource = {
  message: 'the signed content names {timestamp}: set timestampHeader or timestampField',
  path: ['timestampHeader'],
};
const idSourced = (h: { signedContent: string; idHeader?: string | undefined }): boolean =>
  !h.signedContent.includes('{id}') || h.idHeader !== undefined;
const idSource = { message: 'the signed content names {id}: set idHeader', path: ['idHeader'] };

/** A signature the scheme `hmac` checks: every "not shown" point of the sender's rule. */
const hmacSchema = z
  .object({ ...templateFields, algorithm: z.enum(['sha256', 'sha512', 'sha1']).default('sha256') })
  .strict()
  .refine(timestampSourced, timestampSource)
  .refine(idSourced, idSource);

/** An ed25519 signature over a template (Telnyx-like), verified with the sender's public key(s). */
const ed25519Schema = z
  .object({ ...templateFields, encoding: z.enum(['hex', 'base64']).default('base64') })
  .strict()
  .refine(timestampSourced, timestampSource)
  .refine(idSourced, idSource);

/** A JWT signed HS256 with the secret: the whole body (Dialpad) or a header (Vonage). */
const jwtSchema = z
  .object({
    location: z.enum(['body', 'header']).default('body'),
    header: headerName.default('authorization'),
    prefix: z.string().default('Bearer '),
    /** Claim holding the hex SHA-256 of the body (Vonage's `payload_hash`); required with a header JWT. */
    payloadHashClaim: z.string().min(1).optional(),
    idClaim: z.string().min(1).default('jti'),
  })
  .strict()
  .refine((j) => j.location === 'body' || j.payloadHashClaim !== undefined, {
    message:
      'a JWT in a header signs nothing of the body unless a claim carries its hash: set payloadHashClaim ' +
      '(e.g. payload_hash)',
    path: ['payloadHashClaim'],
  });

/** A shared token (no signature): in a header (RingCentral) or a field of the JSON body (Aircall). */
const tokenSchema = z
  .object({
    location: z.enum(['header', 'body']).default('header'),
    header: headerName.default('verification-token'),
    field: dottedPath.default('token'),
  })
  .strict();

const signatureSchema = z
  .object({
    /**
     * `standard-webhooks` (default), `hmac` or `ed25519` over a template, `jwt` (HS256), or `token` (a
     * shared token, signing nothing).
     */
    scheme: z.enum(['standard-webhooks', 'hmac', 'ed25519', 'jwt', 'token']).default('standard-webhooks'),
    /** Names of environment variables that hold the active secrets (unset ones are skipped). */
    secretEnv: z
      .array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/))
      .default(['CALLS_CONNECTOR_WEBHOOK_SECRET']),
    /** Files of active secrets, one per non-empty line (mode 600, like every secret file). */
    secretFiles: z.array(z.string().min(1)).default([]),
    /**
     * How a secret becomes the key: its UTF-8 text, hex, base64, or Standard Webhooks' `whsec_<base64>`
     * (`whpk_<base64>` for a public key). Default: `standard-webhooks` for that scheme, `base64` for
     * `ed25519` public keys, `utf8` otherwise.
     */
    keyEncoding: z.enum(['utf8', 'hex', 'base64', 'standard-webhooks']).optional(),
    /** How far a signed timestamp may be from now, either way. */
    toleranceMs: durationMs(1_000).default(5 * 60_000),
    /** The origin the sender posts to, e.g. `https://hooks.example.com`, for a signed `{url}`. */
    publicUrl: z
      .url({ protocol: /^https?$/ })
      .refine((u) => new URL(u).pathname === '/' && !u.includes('?'), 'an origin, without a path or query')
      .optional(),
    /** `webhook-*` headers (the spec) or `svix-*` (Svix-branded senders, e.g. Clerk). */
    standardWebhooks: z
      .object({ headerPrefix: z.enum(['webhook', 'svix']).default('webhook') })
      .strict()
      .prefault({}),
    hmac: hmacSchema.prefault({}),
    ed25519: ed25519Schema.prefault({}),
    jwt: jwtSchema.prefault({}),
    token: tokenSchema.prefault({}),
    /** A registration handshake to answer: `slack`, `zoom`, `ringcentral`, or `none`. */
    challenge: z.enum(['none', 'slack', 'zoom', 'ringcentral']).default('none'),
  })
  .strict()
  .refine(
    (s) =>
      !(s.scheme === 'hmac' || s.scheme === 'ed25519') ||
      !/\{url\}/.test(s[s.scheme].signedContent) ||
      s.publicUrl !== undefined,
    { message: 'the signed content names {url}: set publicUrl', path: ['publicUrl'] },
  )
  .prefault({});

export type SignatureConfig = z.infer<typeof signatureSchema>;

/**
 * What the configured scheme's signature covers: a signed timestamp bounds how long a captured delivery
 * stays acceptable; a signed id names a delivery so its retries and replays are one. `jwt` signs its `iat`
 * (required unless replay protection is waived); `token` signs nothing.
 */
export function signedCoverage(signature: SignatureConfig): { timestamp: boolean; id: boolean } {
  switch (signature.scheme) {
    case 'standard-webhooks':
      return { timestamp: true, id: true };
    case 'hmac':
    case 'ed25519': {
      const scheme = signature[signature.scheme];
      return templateCoverage(parseTemplate(legacyTemplate(scheme.signedContent, scheme.separator)), scheme);
    }
    case 'jwt':
      return { timestamp: true, id: false };
    case 'token':
      return { timestamp: false, id: false };
  }
}

/**
 * The receiver's limits (receiver.ts): what a flood of connections or slow requests can hold before any of them
 * is authenticated, and how long a delivery waits for its nudge to be taken. Behind an ingress every connection
 * comes from the ingress's addresses: `maxConnectionsPerAddress` must cover the connections it keeps open.
 */
const receiverLimitsSchema = z
  .object({
    maxConnections: z.number().int().min(1).max(100_000).default(256),
    maxConnectionsPerAddress: z.number().int().min(1).max(100_000).default(64),
    headersTimeoutMs: durationMs(100).default(5_000),
    requestTimeoutMs: durationMs(100).default(10_000),
    nudgeTimeoutMs: durationMs(100).default(5_000),
  })
  .strict()
  .refine((l) => l.requestTimeoutMs >= l.headersTimeoutMs, {
    message: 'requestTimeoutMs must be at least headersTimeoutMs',
    path: ['requestTimeoutMs'],
  })
  .prefault({});

export const webhooksSchema = z
  .object({
    enabled: z.boolean().default(false),
    /** Loopback by default, behind a local ingress; 0.0.0.0 to be reached from elsewhere. */
    host: z.string().default('127.0.0.1'),
    port: z.number().int().min(0).max(65535).default(8465),
    path: z
      .string()
      .regex(/^\/[A-Za-z0-9._~\-/]*$/, 'an absolute path such as /webhooks/calls')
      .default('/webhooks/calls'),
    /** HTTPS with this certificate; absent: plain HTTP behind an ingress that terminates TLS. */
    tls: z
      .object({ certFile: z.string().min(1), keyFile: z.string().min(1) })
      .strict()
      .optional(),
    bodyLimitBytes: z
      .number()
      .int()
      .min(256)
      .max(16 * 1024 * 1024)
      .default(64 * 1024),
    limits: receiverLimitsSchema,
    signature: signatureSchema,
    replay: z
      .object({
        maxEntries: z.number().int().min(1).max(10_000_000).default(100_000),
        /**
         * Accept a scheme that signs no timestamp (nothing then bounds how long a captured delivery stays
         * acceptable: it is refused only while the window still holds its key).
         */
        waiveProtection: z.boolean().default(false),
      })
      .strict()
      .prefault({}),
    payload: z
      .object({
        eventPath: dottedPath.default('type'),
        eventPrefix: z.string().default('call.'),
        uidPath: dottedPath.default('data.uid'),
        locationPath: dottedPath.default('data.locationUid'),
      })
      .strict()
      .prefault({}),
    /** uids whose location the receiver remembers (LRU), for deliveries without a location. */
    uidIndexSize: z.number().int().min(1).max(10_000_000).default(100_000),
    /**
     * The live poll interval while the receiver is enabled, in place of poll.intervalMs: polls are then the
     * safety net that reconciles what deliveries missed (livePollIntervalMs).
     */
    reconcileIntervalMs: durationMs(1_000).default(15 * 60_000),
    /** How late a delivery may come after a poll published its change before the change counts as missed. */
    missedGraceMs: durationMs(1_000).default(60_000),
    /** Development only: accept deliveries without checking any signature (warned about at every start). */
    allowUnsigned: z.boolean().default(false),
  })
  .strict()
  .superRefine((w, ctx) => {
    if (!w.enabled || w.allowUnsigned || w.replay.waiveProtection) return;
    const covered = signedCoverage(w.signature);
    if (covered.timestamp) return;
    ctx.addIssue({
      code: 'custom',
      path: ['replay', 'waiveProtection'],
      message: covered.id
        ? `webhooks.signature (${w.signature.scheme}) signs an id but no timestamp: a captured delivery stays ` +
          'acceptable once its id has left the replay window (webhooks.replay.maxEntries). Sign a timestamp, or ' +
          'set webhooks.replay.waiveProtection: true to accept that'
        : `webhooks.signature (${w.signature.scheme}) signs neither a timestamp nor an id: a captured delivery ` +
          'could be replayed for ever. Sign a timestamp (e.g. a signedContent with {timestamp}), or set ' +
          'webhooks.replay.waiveProtection: true to accept that',
    });
  })
  .prefault({});

export type WebhooksConfig = z.infer<typeof webhooksSchema>;

/**
 * The interval of the live polls: webhooks.reconcileIntervalMs while the receiver is enabled (the nudges poll
 * changes as they happen), poll.intervalMs otherwise. One rule, whatever poll.intervalMs says.
 */
export function livePollIntervalMs(config: {
  poll: { intervalMs: number };
  webhooks: Pick<WebhooksConfig, 'enabled' | 'reconcileIntervalMs'>;
}): number {
  return config.webhooks.enabled ? config.webhooks.reconcileIntervalMs : config.poll.intervalMs;
}
