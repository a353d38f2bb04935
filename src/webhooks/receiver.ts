/**
 * The webhook receiver: the connector's first internet-facing listener (docs/security.md), on its own host
 * and port, apart from the metrics endpoint (which is for the local scraper only). HTTPS with a certificate,
 * or plain HTTP behind an ingress that terminates TLS.
 *
 * One route: `POST {path}` (every configured location) or `POST {path}/{grant}` (that grant's locations: one
 * endpoint registered per OAuth grant says whose delivery it is). Each delivery, in this order:
 * 1. a request target that is not a URL 400, wrong path 404, wrong method 405 (none counted as a delivery);
 *    not a JSON content type 400 (malformed) unless the scheme's body is a JWT; a registration handshake
 *    (signature/challenge.ts) is answered there or, signed ones, after step 3 (200, counted ignored);
 * 2. the raw body, at most `bodyLimitBytes`, counted as it streams in (413, too_large);
 * 3. the signature over those raw bytes (401: unsigned, bad_signature, stale_timestamp);
 * 4. the same delivery's nudge being offered now (pending-offers.ts): it waits for that offer and shares its
 *    outcome (200 replayed once taken, 503 if not); an id already taken (replayed): 200, nothing nudged;
 * 5. the payload mapping: not JSON or no uid 400 (malformed); not `call.*` 200 (ignored);
 * 6. the location(s) (nudge-resolution.ts); none of ours: 200 (ignored);
 * 7. the nudge handed to the NudgeSink: 202 (accepted) as soon as `offer` resolves, before any polling; an
 *    offer that rejects or is not settled within `limits.nudgeTimeoutMs` answers 503 so the sender retries
 *    later (unavailable). Only a taken delivery's id enters the replay window.
 *
 * Before authentication nothing may hold much: at most `limits.maxConnections` connections (and
 * `maxConnectionsPerAddress` from one address, connection-limits.ts), each cut once its headers take longer than
 * `headersTimeoutMs` or its whole request longer than `requestTimeoutMs` (checked every second), and each
 * holding at most `bodyLimitBytes` of body.
 *
 * Each delivery is counted once by outcome (`calls_connector_webhook_deliveries_total`); a refused delivery or
 * malformed request is logged at debug only (a flood of forgeries must not flood the log), never with its body or
 * headers.
 *
 * Contract: `start()` resolves with the bound address (port 0: an ephemeral one); `close()` stops listening,
 * closes idle connections and resolves once open requests have ended. Nothing is published from a payload.
 */
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import { FatalError } from '../errors/index.js';
import { closeListener, listen } from '../ops/listening.js';
import type { Logger } from '../logging/logger.js';
import type { ConnectorMetrics } from '../metrics/metrics.js';
import { TIMED_OUT, withTimeout, type Clock } from '../time/clock.js';
import { ConnectionLimits } from './connection-limits.js';
import { mapPayload, type PayloadMapping } from './payload-mapping.js';
import type { GrantDirectory } from './location-directory.js';
import { resolveNudge, type ResolvedNudge } from './nudge-resolution.js';
import { PendingOffers } from './pending-offers.js';
import type { ReplayWindow } from './replay-window.js';
import type { ChallengeAnswer } from './signature/challenge.js';
import {
  expectsJsonBody,
  handshakeAfterSignature,
  handshakeBeforeSignature,
  verifyDelivery,
  type SignatureRule,
} from './signature/verify.js';
import type { UidLocationIndex } from './uid-locations.js';

/**
 * Where a taken nudge goes: the scheduler makes the location's live poll due now (scheduler-nudges.ts); a
 * distributed instance will carry it to the location's owner over a nudge topic (docs/webhooks.md).
 * Contract: resolves once the nudge is taken (queued, not polled); rejects when it cannot be taken now.
 */
export interface NudgeSink {
  offer(nudge: ResolvedNudge): Promise<void>;
}

export type DeliveryOutcome =
  | 'accepted'
  | 'ignored'
  | 'unsigned'
  | 'bad_signature'
  | 'stale_timestamp'
  | 'replayed'
  | 'malformed'
  | 'too_large'
  | 'unavailable';

export type WebhookReceiverMetrics = Pick<ConnectorMetrics, 'webhookDeliveries' | 'webhookNudges'>;

/** What bounds the receiver's connections and waits (config `webhooks.limits`). */
export interface WebhookReceiverLimits {
  /** Open connections in all; more are closed as they open. */
  maxConnections: number;
  /** Open connections from one source address; more from it are closed as they open. */
  maxConnectionsPerAddress: number;
  /** A connection whose request headers are not all in within this is cut (408). */
  headersTimeoutMs: number;
  /** A connection whose whole request is not in within this is cut (408). */
  requestTimeoutMs: number;
  /** A nudge not taken within this is answered 503 (the sender retries). */
  nudgeTimeoutMs: number;
}

/** How often Node looks for connections past `headersTimeoutMs` / `requestTimeoutMs` (its default: 30 s). */
const CONNECTIONS_CHECKING_INTERVAL_MS = 1_000;
const KEEP_ALIVE_TIMEOUT_MS = 5_000;

export interface WebhookReceiverOptions {
  host: string;
  port: number;
  /** The route, e.g. `/webhooks/calls`; `{path}/{grant}` names the grant. */
  path: string;
  /** PEM certificate chain and key; absent: plain HTTP (behind a TLS-terminating ingress). */
  tls?: { cert: string; key: string } | undefined;
  bodyLimitBytes: number;
  limits: WebhookReceiverLimits;
  rule: SignatureRule;
  replay: ReplayWindow;
  mapping: PayloadMapping;
  directory: GrantDirectory;
  index: Pick<UidLocationIndex, 'locationOf'>;
  sink: NudgeSink;
  metrics: WebhookReceiverMetrics;
  /** Reads the time for signatures and replays; runs the nudge timeout. */
  clock: Clock;
  logger?: Logger;
}

export interface WebhookReceiverAddress {
  host: string;
  port: number;
  /** e.g. https://127.0.0.1:8465/webhooks/calls */
  url: string;
}

/** What the sender is told; the reason stays in our metrics and debug log. */
const STATUS: Record<DeliveryOutcome, number> = {
  accepted: 202,
  ignored: 200,
  replayed: 200,
  unsigned: 401,
  bad_signature: 401,
  stale_timestamp: 401,
  malformed: 400,
  too_large: 413,
  unavailable: 503,
};

type OfferOutcome = Extract<DeliveryOutcome, 'accepted' | 'unavailable'>;

export class WebhookReceiver {
  private server: Server | undefined;
  private readonly path: string;
  private readonly pending = new PendingOffers<OfferOutcome>();

  constructor(private readonly options: WebhookReceiverOptions) {
    this.path = options.path.replace(/\/+$/, '') || '/';
    if (!Number.isInteger(options.port) || options.port < 0 || options.port > 65_535)
      throw new RangeError(`webhook port must be an integer in 0..65535, got ${options.port}`);
    const { limits } = options;
    for (const key of ['maxConnections', 'maxConnectionsPerAddress', 'headersTimeoutMs'] as const) {
      if (!Number.isInteger(limits[key]) || limits[key] < 1)
        throw new RangeError(`webhook receiver ${key} must be an integer >= 1, got ${limits[key]}`);
    }
    if (!(limits.requestTimeoutMs >= limits.headersTimeoutMs) || !(limits.nudgeTimeoutMs > 0))
      throw new RangeError(
        'webhook receiver requestTimeoutMs must be >= headersTimeoutMs, nudgeTimeoutMs > 0',
      );
  }

  async start(): Promise<WebhookReceiverAddress> {
    if (this.server !== undefined) throw new Error('WebhookReceiver already started');
    const handler = (req: IncomingMessage, res: ServerResponse): void => {
      this.handle(req, res).catch((error: unknown) => {
        // A sender that hangs up mid-body is its own business (and an easy flood): debug, not error.
        if (req.destroyed) this.options.logger?.debug({ err: error }, 'webhook sender hung up');
        else this.options.logger?.error({ err: error }, 'webhook receiver failed on a delivery');
        if (!res.headersSent) reply(res, 500, 'internal error');
        else res.destroy();
      });
    };
    const { tls, limits, logger } = this.options;
    // Facing the internet: a slow sender holds a socket for seconds, not minutes, and Node looks for the late
    // ones every second (not every 30 s).
    const timeouts = {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
      connectionsCheckingInterval: CONNECTIONS_CHECKING_INTERVAL_MS,
    };
    const server =
      tls === undefined
        ? createHttpServer(timeouts, handler)
        : // A TLS handshake is bounded like the headers (Node's default: 120 s).
          createHttpsServer({ ...tls, ...timeouts, handshakeTimeout: limits.headersTimeoutMs }, handler);
    server.headersTimeout = limits.headersTimeoutMs;
    server.requestTimeout = limits.requestTimeoutMs;
    server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
    server.maxConnections = limits.maxConnections;
    const perAddress = new ConnectionLimits({
      perAddress: limits.maxConnectionsPerAddress,
      refused: (address) =>
        logger?.debug({ address }, 'webhook connection refused: too many from its address'),
    });
    server.on('connection', (socket: Socket) => perAddress.admit(socket));
    this.server = server;
    try {
      await listen(server, this.options.port, this.options.host);
    } catch (error) {
      this.server = undefined;
      const code = (error as NodeJS.ErrnoException).code ?? String(error);
      throw new FatalError(
        'WEBHOOK_LISTEN_FAILED',
        `cannot listen on ${this.options.host}:${this.options.port} for webhooks (${code}): ` +
          'set webhooks.port (and webhooks.host) to a free address, or webhooks.enabled: false',
        { cause: error },
      );
    }
    return this.address();
  }

  address(): WebhookReceiverAddress {
    const bound = this.server?.address();
    if (bound === undefined || bound === null || typeof bound === 'string')
      throw new Error('WebhookReceiver not started');
    const host = bound.address.includes(':') ? `[${bound.address}]` : bound.address;
    const scheme = this.options.tls === undefined ? 'http' : 'https';
    return { host: bound.address, port: bound.port, url: `${scheme}://${host}:${bound.port}${this.path}` };
  }

  async close(): Promise<void> {
    const server = this.server;
    if (server === undefined) return;
    this.server = undefined;
    await closeListener(server);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const pathname = pathOf(req.url ?? '/');
    if (pathname === undefined) {
      // Anyone who reaches the port can send such a request line: answered, never logged above debug.
      this.options.logger?.debug('webhook request refused: its target is not a URL');
      req.resume();
      reply(res, 400, 'bad request');
      return;
    }
    const route = this.route(pathname);
    if (route === undefined) {
      reply(res, 404, 'not found');
      return;
    }
    if (req.method !== 'POST') {
      res.setHeader('allow', 'POST');
      reply(res, 405, 'method not allowed');
      return;
    }
    const outcome = await this.deliver(req, res, route.grant);
    this.options.metrics.webhookDeliveries.inc({ outcome });
    if (!res.headersSent) {
      const status = STATUS[outcome];
      if (outcome === 'unavailable') res.setHeader('retry-after', '5');
      if (outcome === 'too_large') res.setHeader('connection', 'close');
      reply(res, status, outcome);
    }
  }

  /** The grant the path names (null: the bare path); undefined when the path is not ours. */
  private route(pathname: string): { grant: string | null } | undefined {
    if (pathname === this.path || pathname === `${this.path}/`) return { grant: null };
    const prefix = this.path === '/' ? '/' : `${this.path}/`;
    if (!pathname.startsWith(prefix)) return undefined;
    let grant: string;
    try {
      grant = decodeURIComponent(pathname.slice(prefix.length));
    } catch {
      return undefined; // malformed %-escape: not a grant of ours
    }
    return grant !== '' && !grant.includes('/') && this.options.directory.hasGrant(grant)
      ? { grant }
      : undefined;
  }

  private async deliver(
    req: IncomingMessage,
    res: ServerResponse,
    grant: string | null,
  ): Promise<DeliveryOutcome> {
    const { logger, rule } = this.options;
    const handshake = handshakeBeforeSignature(rule, req.headers);
    if (handshake !== null) return answerHandshake(req, res, handshake);
    if (expectsJsonBody(rule) && !isJson(req.headers['content-type'])) {
      req.resume();
      logger?.debug({ outcome: 'malformed' }, 'webhook delivery refused: not application/json');
      return 'malformed';
    }
    const body = await readLimited(req, this.options.bodyLimitBytes);
    if (body === undefined) return 'too_large';
    const nowMs = this.options.clock.now();
    const delivery = { headers: req.headers, body, nowMs, target: req.url };
    const verdict = await verifyDelivery(rule, delivery);
    if (!verdict.ok) {
      logger?.debug({ outcome: verdict.reason, detail: verdict.detail }, 'webhook delivery refused');
      return verdict.reason;
    }
    const payload = verdict.payload ?? body;
    const signedHandshake = handshakeAfterSignature(rule, payload);
    if (signedHandshake !== null) return answerHandshake(req, res, signedHandshake);
    const { replayKey } = verdict;
    if (replayKey !== null) {
      if (this.options.replay.has(replayKey, nowMs)) return 'replayed';
      // The same delivery's nudge is being offered: told "taken" only once it is, never before.
      const pending = this.pending.get(replayKey);
      if (pending !== undefined) return (await pending) === 'accepted' ? 'replayed' : 'unavailable';
    }
    const mapped = mapPayload(this.options.mapping, payload);
    if (mapped.kind === 'malformed') {
      logger?.debug({ outcome: 'malformed', detail: mapped.detail }, 'webhook delivery refused');
      return 'malformed';
    }
    if (mapped.kind === 'ignored') {
      if (replayKey !== null) this.options.replay.record(replayKey, nowMs);
      return 'ignored';
    }
    const resolved = resolveNudge(mapped.nudge, grant, this.options.directory, this.options.index);
    if (resolved === null) {
      logger?.debug({ uid: mapped.nudge.uid }, 'webhook delivery names no location of this connector');
      if (replayKey !== null) this.options.replay.record(replayKey, nowMs);
      return 'ignored';
    }
    // Nothing awaited since the pending check above: a duplicate arriving from now on finds this offer pending.
    return replayKey === null
      ? this.offer(resolved, null)
      : this.pending.run(replayKey, () => this.offer(resolved, replayKey));
  }

  /**
   * Hands the nudge to the sink, bounded by `nudgeTimeoutMs`; never rejects. Taken: its id enters the replay
   * window. Not taken (rejected, or still pending at the timeout): the id stays out of it, so the sender's retry
   * is taken; an offer that completes after its timeout has nudged once more than needed, which costs a poll.
   */
  private async offer(resolved: ResolvedNudge, replayKey: string | null): Promise<OfferOutcome> {
    const { clock, logger, limits } = this.options;
    try {
      const taken = await withTimeout(clock, this.options.sink.offer(resolved), limits.nudgeTimeoutMs);
      if (taken === TIMED_OUT) {
        logger?.warn(
          { uid: resolved.uid, timeoutMs: limits.nudgeTimeoutMs },
          'webhook nudge not taken in time: answered 503 for a retry',
        );
        return 'unavailable';
      }
    } catch (error) {
      logger?.warn({ err: error, uid: resolved.uid }, 'webhook nudge not taken: answered 503 for a retry');
      return 'unavailable';
    }
    if (replayKey !== null) this.options.replay.record(replayKey, clock.now());
    this.options.metrics.webhookNudges.inc({ resolution: resolved.resolution });
    return 'accepted';
  }
}

/** Answers a registration handshake (it nudges nothing: counted `ignored`). */
function answerHandshake(req: IncomingMessage, res: ServerResponse, answer: ChallengeAnswer): 'ignored' {
  req.resume();
  res.statusCode = answer.status;
  for (const [name, value] of Object.entries(answer.headers)) res.setHeader(name, value);
  res.setHeader('cache-control', 'no-store');
  res.end(answer.body);
  return 'ignored';
}

/** The path of a request target; undefined when it is not a URL (`POST http://[ HTTP/1.1`). */
function pathOf(target: string): string | undefined {
  try {
    return new URL(target, 'http://receiver').pathname;
  } catch {
    return undefined;
  }
}

/** `application/json` or a `+json` type, any parameters (charset). */
function isJson(contentType: string | undefined): boolean {
  const type = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  return type === 'application/json' || /^application\/[\w.+-]+\+json$/.test(type);
}

/**
 * The raw body, or undefined once it exceeds `limit` bytes (a declared Content-Length over the limit is
 * refused before anything is read). The rest of an oversized body is drained, not buffered, so the 413
 * reaches the sender before the connection closes.
 */
function readLimited(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  const declared = Number(req.headers['content-length'] ?? Number.NaN);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    return Promise.resolve(undefined);
  }
  // Events, not `for await`: leaving an async iteration early destroys the socket, and the 413 with it.
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size <= limit) {
        chunks.push(chunk);
        return;
      }
      req.off('data', onData);
      req.resume();
      resolve(undefined);
    };
    req.on('data', onData);
    req.once('end', () => resolve(size > limit ? undefined : Buffer.concat(chunks)));
    req.once('error', reject);
    // A sender that hangs up mid-body may emit neither 'end' nor 'error': do not hold its chunks forever.
    req.once('close', () => reject(new Error('the sender closed the connection before the body ended')));
  });
}

function reply(res: ServerResponse, status: number, word: string): void {
  const body = `${JSON.stringify({ status: word })}\n`;
  res.statusCode = status;
  res.setHeader('content-type', 'application/json');
  res.setHeader('cache-control', 'no-store');
  res.setHeader('content-length', Buffer.byteLength(body));
  res.end(body);
}
