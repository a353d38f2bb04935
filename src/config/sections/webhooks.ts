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
import { durationMs } from '../duration.js';

const dottedPath = z.string().regex(/^[^.\s]+(\.[^.\s]+)*$/, 'a dotted path such as data.uid');
const headerName = z
  .string()
  .regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, 'an HTTP header name')
  .transform((name) => name.toLowerCase());

/** A signature the scheme `hmac` checks: every "not shown" point of the sender's rule. */
const hmacSchema = z
  .object({
    header: headerName.default('x-signature'),
    algorithm: z.enum(['sha256', 'sha512', 'sha1']).default('sha256'),
    encoding: z.enum(['hex', 'base64']).default('hex'),
    /** Text before each signature in the header, e.g. `sha256=`. */
    prefix: z.string().default(''),
    /** `body`, or the timestamp header's value, `separator`, then the body. */
    signedContent: z.enum(['body', 'timestamp.body']).default('body'),
    timestampHeader: headerName.optional(),
    timestampUnit: z.enum(['seconds', 'milliseconds']).default('seconds'),
    separator: z.string().default('.'),
    /** Header of the delivery id (the replay window's key); absent: the signature is the key. */
    idHeader: headerName.optional(),
  })
  .strict()
  .refine((h) => h.signedContent === 'body' || h.timestampHeader !== undefined, {
    message: 'signedContent timestamp.body needs timestampHeader',
    path: ['timestampHeader'],
  });

const signatureSchema = z
  .object({
    scheme: z.enum(['standard-webhooks', 'hmac']).default('standard-webhooks'),
    /** Names of environment variables that hold the active secrets (unset ones are skipped). */
    secretEnv: z
      .array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/))
      .default(['CALLS_CONNECTOR_WEBHOOK_SECRET']),
    /** Files of active secrets, one per non-empty line (mode 600, like every secret file). */
    secretFiles: z.array(z.string().min(1)).default([]),
    /** How far a signed timestamp may be from now, either way. */
    toleranceMs: durationMs(1_000).default(5 * 60_000),
    hmac: hmacSchema.prefault({}),
  })
  .strict()
  .prefault({});

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
      .object({ maxEntries: z.number().int().min(1).max(10_000_000).default(100_000) })
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
