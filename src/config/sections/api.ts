/**
 * `api`: the calls API (paths and fields the spec does not show, with the defaults our sandbox and the known API
 * use), its retries and its learned rate limits.
 */
import { z } from 'zod';
import { durationMs } from '../duration.js';

export const retrySchema = z
  .object({
    /** Total attempts for one request, the first included. */
    maxAttempts: z.number().int().min(1).max(100).default(8),
    /** Backoff before retry n is uniform in [0, min(maxDelayMs, initialDelayMs * multiplier^(n-1))] (full jitter). */
    initialDelayMs: durationMs().default(250),
    maxDelayMs: durationMs().default(30_000),
    multiplier: z.number().min(1).max(10).default(2),
    /** Statuses worth another try. 401 is handled apart (one refresh, then retry once). */
    statuses: z.array(z.number().int().min(400).max(599)).default([408, 425, 429, 500, 502, 503, 504]),
    /**
     * A Retry-After longer than this: a 429 (or a 503 with Retry-After) parks the limiter scope as throttled
     * until then (status, metric, alert; it resumes by itself); any other status gives up the request.
     */
    maxRetryAfterMs: durationMs().default(300_000),
  })
  .strict()
  .prefault({});

/**
 * The learned rate limit (api/rate-limit/): each scope starts at api.requestsPerSecond and adapts (AIMD)
 * within [floorPerSecond, ceilingPerSecond], or stays just under a rate the API announces in its headers.
 */
const rateLimitSchema = z
  .object({
    /** One limiter per OAuth grant (APIs usually limit per access token), or one for the whole process. */
    scope: z.enum(['grant', 'global']).default('grant'),
    floorPerSecond: z.number().positive().default(0.5),
    ceilingPerSecond: z.number().positive().default(1000),
    /**
     * Live requests go first; of the starts granted while history (backfill) requests wait, this fraction is
     * still owed to history, so live polls alone taking the whole budget never stop a backfill (0: strictly
     * live first). Only used when the live lanes want more than the rest of the budget.
     */
    backfillShare: z.number().min(0).max(1).default(0.25),
    /**
     * With webhooks on, the guaranteed share of the worker turns of the live polls that deliveries nudged
     * (their requests are live ones), beside history's backfillShare; the scheduled polls have the rest. A
     * share a kind leaves unused is borrowed by the others, so a flood of deliveries cannot starve the
     * scheduled polls and history, nor scheduled polls filling every worker the nudges.
     */
    nudgeShare: z.number().min(0).max(1).default(0.25),
  })
  .strict()
  .refine((r) => r.backfillShare + r.nudgeShare <= 1, {
    message: 'backfillShare and nudgeShare must sum to at most 1 (the scheduled live polls have the rest)',
    path: ['nudgeShare'],
  })
  .prefault({});

export const apiSchema = z
  .object({
    baseUrl: z.url({
      protocol: /^https?$/,
      error: 'expected an absolute https:// URL, e.g. https://api.calls.example.com',
    }),
    /** Extra CA bundle (PEM) trusted in addition to the system's, e.g. the sandbox's certificate. */
    caFile: z.string().min(1).optional(),
    /** Plain HTTP is refused unless this is set: the spec says the API is HTTPS. For local tests only. */
    allowInsecureHttp: z.boolean().default(false),
    listPath: z.string().startsWith('/').default('/v4/calls'),
    /** `{uid}` is replaced by the URL-encoded call uid. */
    callPath: z.string().startsWith('/').includes('{uid}').default('/v4/calls/{uid}'),
    /** Dotted path of the items array in a listing page body. */
    itemsField: z.string().min(1).default('data'),
    /** Dotted path of the next cursor; a top-level `nextCursor` is read when this path is absent. */
    nextCursorField: z.string().min(1).default('metadata.nextCursor'),
    /** Dotted path of the call object in a GET {callPath} body; when absent there, the body itself is the call. */
    callField: z.string().default('data'),
    tokenHeader: z.string().min(1).default('Authorization'),
    tokenPrefix: z.string().default('Bearer '),
    /** Page size sent as `limit`; the spec allows 0..100 (0 would never advance). */
    pageSize: z.number().int().min(1).max(100).default(100),
    requestsPerSecond: z.number().positive().default(20),
    maxConcurrency: z.number().int().min(1).max(256).default(8),
    requestTimeoutMs: durationMs(1).default(30_000),
    /** Complete each listed call from GET {callPath} (times, isPrivate, conversationUid). */
    enrich: z.boolean().default(true),
    enrichConcurrency: z.number().int().min(1).max(64).default(8),
    /**
     * A listing request that sent a cursor and got ANY 4xx but 401/403/429, whatever its body, restarts
     * from the watermark (the cursor is not usable; a restarted first page carries none, so a real bad
     * request still shows). These statuses name the expected answer (spec: not shown; the sandbox answers
     * 410 cursor_expired): the restart is then counted as `invalid_cursor` rather than `rejected_4xx`.
     */
    invalidCursorStatuses: z.array(z.number().int().min(400).max(499)).default([410]),
    /** ... likewise any 4xx whose error code (at errorCodeField) is one of these. */
    invalidCursorErrorCodes: z.array(z.string().min(1)).default(['invalid_cursor', 'cursor_expired']),
    /** Dotted paths of the error code and message in an error body (`{"error":{"code","message"}}`). */
    errorCodeField: z.string().min(1).default('error.code'),
    errorMessageField: z.string().min(1).default('error.message'),
    /** A response body larger than this is refused (memory stays bounded by pages in flight). */
    maxResponseBytes: z
      .number()
      .int()
      .min(1024)
      .default(16 * 1024 * 1024),
    retry: retrySchema,
    rateLimit: rateLimitSchema,
    /**
     * Page attempts after which a call whose GET {callPath} keeps failing transiently (5xx, timeouts) is
     * published unenriched and redacted (reason `unavailable`) instead of failing its page again: one
     * poison call never stalls its location.
     */
    poisonCallPageAttempts: z.number().int().min(1).max(1000).default(5),
  })
  .strict();

export type ApiConfig = z.infer<typeof apiSchema>;
export type RetryConfig = ApiConfig['retry'];
