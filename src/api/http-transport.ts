/**
 * The HTTP layer under the calls API client: one undici Agent (a keep-alive connection pool per origin),
 * TLS verification always on (an extra CA can be trusted, e.g. the sandbox's), request timeouts, a bounded
 * response size, and the limits: request starts paced per limiter scope (a grant, or global) at a rate
 * learned from the API's answers (rate-limit/: AIMD from `requestsPerSecond`, RateLimit headers, the whole
 * scope held on a 429's Retry-After; live requests before backfill ones), and at most `maxConcurrency`
 * requests in flight across every scope (concurrency-cap.ts: p-queue, live first).
 *
 * One attempt per call: retries are the client's business (calls-api-client.ts). Failures come out as
 * ConnectorErrors: RetriableError API_NETWORK / API_TIMEOUT for transient faults, FatalError API_TLS when
 * the server's certificate cannot be verified (retrying cannot fix trust), FatalError API_INVALID_REQUEST
 * when undici refuses to send the request (an invalid header, such as a token with a line break); which is
 * which is transport-errors.ts. Programmer errors pass through unwrapped. A caller's abort rejects with the
 * signal's reason, untouched.
 */
import { createSecureContext, rootCertificates } from 'node:tls';
import { Agent } from 'undici';
import { FatalError, RetriableError } from '../errors/index.js';
import { statusClass, type ConnectorMetrics } from '../metrics/metrics.js';
import type { Logger } from '../logging/logger.js';
import { silentLogger } from '../logging/logger.js';
import { systemClock, wallTimer, type Clock } from '../time/clock.js';
import { ConcurrencyCap } from './concurrency-cap.js';
import { answerClockMs, readAnnounced, readRetryAfter, waitMs } from './rate-limit/headers.js';
import { HoldNotices } from './rate-limit/hold-notices.js';
import { RateLimiters, type RateLimitConfig, type RateLimitMetrics } from './rate-limit/registry.js';
import type { Grant, RequestPriority, ScopeLimiter } from './rate-limit/scope-limiter.js';
import { isRateRefusal } from './response-classifier.js';
import { readCaFile, transportError } from './transport-errors.js';

export { readCaFile };

/** The transport's requests (in flight, waiting for the rate limiter, durations), and its rate limiters'. */
export type HttpTransportMetrics = Pick<
  ConnectorMetrics,
  'apiInFlight' | 'apiRateLimiterWait' | 'apiRequestDuration'
> &
  RateLimitMetrics;

export interface HttpRequest {
  /** The `endpoint` label of the request metrics (list, get_call); 'other' when absent. */
  endpoint?: string;
  /** Path below the base URL's origin, starting with "/". */
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  /** The limiter scope's grant (api.rateLimit.scope `grant`); the global scope when absent. */
  grant?: string;
  /** Polls of caught-up locations and their single calls are `live` and go first; `live` when absent. */
  priority?: RequestPriority;
}

export interface HttpResponse {
  status: number;
  /** Lower-cased header names; a field sent on several lines, its values joined by ", ". */
  header(name: string): string | null;
  /** The whole body as UTF-8 (bounded by maxResponseBytes). */
  body: string;
}

/** What the API client needs from HTTP; a fake in unit tests, HttpTransport in production. */
export interface HttpClient {
  send(request: HttpRequest, signal?: AbortSignal): Promise<HttpResponse>;
  close(): Promise<void>;
  /**
   * True when the client itself holds the request's scope on a refusal for rate (429, or 503 with
   * Retry-After) until its Retry-After or a backoff: a re-sent request then waits in its limiter, and the
   * caller must not wait again.
   */
  readonly pacesRefusals?: boolean;
}

export interface HttpTransportOptions {
  baseUrl: string;
  /** PEM text of extra CAs to trust in addition to the system's (from api.caFile). */
  extraCaPem?: string;
  allowInsecureHttp: boolean;
  requestTimeoutMs: number;
  maxResponseBytes: number;
  requestsPerSecond: number;
  maxConcurrency: number;
  metrics: HttpTransportMetrics;
  rateLimit?: RateLimitConfig;
  retry?: { initialDelayMs: number; maxDelayMs: number; maxRetryAfterMs: number };
  clock?: Clock;
  /** Where a rate-limit wait that makes no sense, or is capped, is said (once per scope and header). */
  logger?: Logger;
  /**
   * A request of a parked (throttled) scope is refused (API_SCOPE_THROTTLED) instead of waiting for the hold's
   * end: the connector's scheduler parks its location without a worker (rate-limit/scope-limiter.ts).
   */
  refuseWhileParked?: boolean;
}

const DEFAULT_RATE_LIMIT: RateLimitConfig = {
  scope: 'grant',
  floorPerSecond: 0.5,
  ceilingPerSecond: 1000,
  backfillShare: 0.25,
};
const DEFAULT_HOLDS = { initialDelayMs: 250, maxDelayMs: 30_000, maxRetryAfterMs: 300_000 };

/** A histogram of one set of label values. */
interface Observer {
  observe(value: number): void;
}

export class HttpTransport implements HttpClient {
  readonly pacesRefusals = true;
  /** The limiter scopes (status, tests). */
  readonly limiters: RateLimiters;
  private readonly clock: Clock;
  private readonly origin: string;
  private readonly agent: Agent;
  private readonly cap: ConcurrencyCap;
  private readonly limiterWaits = new Map<string, Observer>();
  private readonly durations = new Map<string, Observer>();
  private readonly notices: HoldNotices;

  constructor(private readonly options: HttpTransportOptions) {
    const url = new URL(options.baseUrl);
    if (url.protocol === 'http:' && !options.allowInsecureHttp) {
      throw new FatalError(
        'API_INSECURE_URL',
        `api.baseUrl ${url.origin} is plain http; the calls API is HTTPS (set api.allowInsecureHttp only for local tests)`,
      );
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:')
      throw new FatalError('API_BAD_URL', `api.baseUrl must be https://, got ${url.protocol}`);
    this.origin = url.origin;
    this.agent = new Agent({
      keepAliveTimeout: 30_000,
      headersTimeout: options.requestTimeoutMs,
      bodyTimeout: options.requestTimeoutMs,
      connections: options.maxConcurrency,
      connect: {
        rejectUnauthorized: true,
        timeout: Math.min(options.requestTimeoutMs, 10_000),
        // One secure context for every connection: passing `ca` instead would parse the whole root bundle
        // again for each new TLS connection (the top cost of a backfill's profile after the requests).
        ...(options.extraCaPem === undefined
          ? {}
          : { secureContext: createSecureContext({ ca: [...rootCertificates, options.extraCaPem] }) }),
      },
    });
    this.cap = new ConcurrencyCap(options.maxConcurrency);
    this.clock = options.clock ?? systemClock;
    const retry = options.retry ?? DEFAULT_HOLDS;
    this.limiters = new RateLimiters(this.clock, {
      requestsPerSecond: options.requestsPerSecond,
      rateLimit: options.rateLimit ?? DEFAULT_RATE_LIMIT,
      retry,
      metrics: options.metrics,
      refuseWhileParked: options.refuseWhileParked === true,
    });
    this.notices = new HoldNotices(options.logger ?? silentLogger(), retry.maxRetryAfterMs);
  }

  /** Builds a transport from the api config section, reading api.caFile. */
  static async fromConfig(
    api: {
      baseUrl: string;
      caFile?: string | undefined;
      allowInsecureHttp: boolean;
      requestTimeoutMs: number;
      maxResponseBytes: number;
      requestsPerSecond: number;
      maxConcurrency: number;
      rateLimit: RateLimitConfig;
      retry: { initialDelayMs: number; maxDelayMs: number; maxRetryAfterMs: number };
    },
    metrics: HttpTransportMetrics,
    clock?: Clock,
    logger?: Logger,
    behaviour: { refuseWhileParked?: boolean } = {},
  ): Promise<HttpTransport> {
    const extraCaPem = api.caFile === undefined ? undefined : await readCaFile(api.caFile);
    return new HttpTransport({
      ...api,
      ...behaviour,
      ...(extraCaPem === undefined ? {} : { extraCaPem }),
      ...(clock === undefined ? {} : { clock }),
      ...(logger === undefined ? {} : { logger }),
      metrics,
    });
  }

  /**
   * Waits for the scope's pace and the concurrency cap, then makes the exchange, and tells the scope how
   * the API answered (a refusal for rate holds the scope; rate-limit headers set its pace). The wait and the
   * exchange are timed apart: the wait on our own limiters is `api_rate_limiter_wait_seconds`, the exchange
   * alone (request sent to body read) is `api_request_duration_seconds`, so a slow API and a tight rate
   * are told apart.
   */
  async send(request: HttpRequest, signal?: AbortSignal): Promise<HttpResponse> {
    const endpoint = request.endpoint ?? 'other';
    const priority = request.priority ?? 'live';
    const queuedAt = performance.now();
    const scope = this.limiters.scope(request.grant);
    const grant = await scope.acquire(priority, signal);
    const response = await this.cap.run(
      () => {
        const wait = (performance.now() - queuedAt) / 1000;
        this.limiterWait(endpoint).observe(wait);
        return this.timedExchange(endpoint, request, signal);
      },
      priority,
      signal,
    );
    this.feedBack(this.limiters.scopeName(request.grant), scope, grant, response);
    return response;
  }

  /**
   * Tells the request's scope how the API answered: a refusal for rate holds it for its Retry-After (a
   * backoff when absent or unreadable), an answer announcing a spent quota until its reset. The scope caps
   * every hold at api.retry.maxRetryAfterMs; a wait capped or unreadable is said once (HoldNotices). Waits
   * written as a time are read on the API's clock (answerClockMs).
   */
  private feedBack(scopeName: string, scope: ScopeLimiter, grant: Grant, response: HttpResponse): void {
    const now = answerClockMs(response.header('date'), this.clock.now());
    const retryAfter = response.header('retry-after');
    if (isRateRefusal(response.status, retryAfter)) {
      const wait = readRetryAfter(retryAfter, now);
      if (wait !== null) this.notices.acted(scopeName, { header: 'retry-after', ...wait });
      scope.refused(grant, waitMs(wait));
      return;
    }
    const announced = readAnnounced((name) => response.header(name), now);
    if (announced.remaining === 0 && announced.reset !== null) this.notices.acted(scopeName, announced.reset);
    scope.answered(grant, announced);
  }

  private async timedExchange(
    endpoint: string,
    request: HttpRequest,
    signal?: AbortSignal,
  ): Promise<HttpResponse> {
    const startedAt = performance.now();
    let status: number | undefined;
    try {
      const response = await this.sendNow(request, signal);
      status = response.status;
      return response;
    } finally {
      this.requestDuration(endpoint, statusClass(status)).observe((performance.now() - startedAt) / 1000);
    }
  }

  /** api_rate_limiter_wait_seconds of one endpoint, looked up once (every request observes it). */
  private limiterWait(endpoint: string): Observer {
    let observer = this.limiterWaits.get(endpoint);
    if (observer === undefined) {
      observer = this.options.metrics.apiRateLimiterWait.labels({ endpoint });
      this.limiterWaits.set(endpoint, observer);
    }
    return observer;
  }

  /** api_request_duration_seconds of one endpoint and status class, looked up once. */
  private requestDuration(endpoint: string, statusClassLabel: string): Observer {
    const key = `${endpoint} ${statusClassLabel}`;
    let observer = this.durations.get(key);
    if (observer === undefined) {
      observer = this.options.metrics.apiRequestDuration.labels({ endpoint, status_class: statusClassLabel });
      this.durations.set(key, observer);
    }
    return observer;
  }

  private async sendNow(request: HttpRequest, signal?: AbortSignal): Promise<HttpResponse> {
    signal?.throwIfAborted();
    // The request's deadline and the caller's abort, on one controller. A wall-clock timer cleared when the
    // exchange ends (time/clock.ts wallTimer: wall time like undici's own header and body timeouts) and a
    // listener removed then: AbortSignal.timeout and AbortSignal.any per request cost a weak reference, a
    // finalizer, and a timer left to fire 30 s later, on every idle poll.
    const controller = new AbortController();
    let timedOut = false;
    const timeoutMs = this.options.requestTimeoutMs;
    const timer = wallTimer(timeoutMs, () => {
      timedOut = true;
      controller.abort(new DOMException(`timed out after ${timeoutMs} ms`, 'TimeoutError'));
    });
    const onAbort = () => controller.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    const query = new URLSearchParams(request.query).toString();
    const path = `${request.path}${query === '' ? '' : `?${query}`}`;
    this.options.metrics.apiInFlight.inc();
    try {
      const response = await this.agent.request({
        origin: this.origin,
        path: parsedPath(this.origin, path),
        method: 'GET',
        headers: request.headers,
        signal: controller.signal,
      });
      const body = await readBounded(
        response.body,
        this.options.maxResponseBytes,
        () =>
          new RetriableError(
            'API_RESPONSE_TOO_LARGE',
            `the response of ${request.path} exceeds api.maxResponseBytes (${this.options.maxResponseBytes})`,
          ),
      );
      const headers = response.headers;
      return {
        status: response.statusCode,
        // A field sent on several lines reads as one value, its lines joined by commas (RFC 9110 5.3).
        header: (name) => {
          const value = headers[name.toLowerCase()];
          return Array.isArray(value) ? value.join(', ') : (value ?? null);
        },
        body: body.toString('utf8'),
      };
    } catch (error) {
      if (signal?.aborted === true) throw signal.reason;
      throw transportError(error, {
        path: request.path,
        timedOut,
        requestTimeoutMs: this.options.requestTimeoutMs,
      });
    } finally {
      timer.cancel();
      signal?.removeEventListener('abort', onAbort);
      this.options.metrics.apiInFlight.dec();
    }
  }

  async close(): Promise<void> {
    this.limiters.close(new DOMException('the HTTP transport closed', 'AbortError'));
    this.cap.clear();
    await this.agent.close();
  }
}

/**
 * A path (with its query) made only of characters a URL parser leaves as they are: no dot segment, nothing the
 * parser would percent-encode (a space, a quote, a brace, a non-ASCII character) and no fragment. The configured
 * listing path, a call's path (its uid percent-encoded) and a form-encoded query always are.
 */
const PLAIN_PATH = /^\/[\w\-.~!$&'()*+,;=:@%/]*(?:\?[\w\-.~!$&()*+,;=:@%/?]*)?$/;
const DOT_SEGMENT = /\/(?:\.|%2e){1,2}(?:[/?]|$)/i;

/**
 * `path` as the request sends it: as a URL parser of `origin` + `path` leaves it (the path and the query), the way
 * undici's `request(url)` sends a URL. A plain path (the connector's own requests) is left as it is without
 * parsing it; any other is parsed (a dot segment removed, a space percent-encoded).
 */
export function parsedPath(origin: string, path: string): string {
  if (PLAIN_PATH.test(path) && !DOT_SEGMENT.test(path)) return path;
  const url = new URL(`${origin}${path}`);
  return `${url.pathname}${url.search}`;
}

/**
 * The whole of `body`, at most `maxBytes`: past them the stream is destroyed (the connection with it) and the
 * promise rejects with `tooLarge()`; a stream error (an abort, a reset) rejects with that error. Read with the
 * stream's own events rather than `for await`, whose async iterator (a generator, a promise per chunk and
 * end-of-stream listeners) was a visible share of an idle poll's CPU.
 */
export function readBounded(
  body: NodeJS.ReadableStream & { destroy(): void },
  maxBytes: number,
  tooLarge: () => Error,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    body.on('data', (chunk: Buffer | Uint8Array | string) => {
      const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
      size += buffer.length;
      if (size > maxBytes) {
        reject(tooLarge());
        body.destroy();
        return;
      }
      chunks.push(buffer);
    });
    body.once('end', () =>
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size)),
    );
    body.once('error', reject);
  });
}
