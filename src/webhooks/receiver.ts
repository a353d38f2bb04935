/**
 * The webhook receiver: the connector's first internet-facing listener (docs/security.md), on its own host
 * and port, apart from the metrics endpoint (which is for the local scraper only). HTTPS with a certificate,
 * or plain HTTP behind an ingress that terminates TLS.
 *
 * It routes each request (routes.ts): a request target that is not a URL 400, wrong path 404, wrong method 405
 * (none counted as a delivery); a delivery goes to the delivery handler (delivery-handler.ts: signature, replay,
 * payload, nudge), and its outcome is answered with a status (202 accepted; 200 ignored or replayed; 401
 * unsigned, bad_signature, stale_timestamp; 400 malformed; 413 too_large; 503 unavailable, with Retry-After)
 * and counted once (`calls_connector_webhook_deliveries_total`).
 *
 * Before authentication nothing may hold much: at most `limits.maxConnections` connections (and
 * `maxConnectionsPerAddress` from one address, connection-limits.ts), each cut once its headers take longer than
 * `headersTimeoutMs` or its whole request longer than `requestTimeoutMs` (checked every second), and each
 * holding at most `bodyLimitBytes` of body (request-body.ts). A malformed request is logged at debug only.
 *
 * Contract: `start()` resolves with the bound address (port 0: an ephemeral one); `close()` stops listening,
 * closes idle connections and resolves once open requests have ended.
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
import { ConnectionLimits } from './connection-limits.js';
import { DeliveryHandler, type DeliveryHandlerOptions, type DeliveryOutcome } from './delivery-handler.js';
import { readBoundedBody } from './request-body.js';
import { grantRoute, pathOf, routePath } from './routes.js';
import type { ChallengeAnswer } from './signature/challenge.js';
import type { TlsPem } from './tls-files.js';

export type WebhookReceiverMetrics = Pick<
  ConnectorMetrics,
  'webhookDeliveries' | 'webhookNudges' | 'webhookConnectionsRefused'
>;

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

/** The receiver's own settings, and what its delivery handler works with (delivery-handler.ts). */
export interface WebhookReceiverOptions extends Omit<
  DeliveryHandlerOptions,
  'nudgeTimeoutMs' | 'metrics' | 'logger'
> {
  host: string;
  port: number;
  /** The route, e.g. `/webhooks/calls`; `{path}/{grant}` names the grant. */
  path: string;
  /** PEM certificate chain and key; absent: plain HTTP (behind a TLS-terminating ingress). */
  tls?: TlsPem | undefined;
  bodyLimitBytes: number;
  limits: WebhookReceiverLimits;
  metrics: WebhookReceiverMetrics;
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

export class WebhookReceiver {
  private server: Server | undefined;
  private readonly path: string;
  private readonly deliveries: DeliveryHandler;

  constructor(private readonly options: WebhookReceiverOptions) {
    this.path = routePath(options.path);
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
    this.deliveries = new DeliveryHandler({ ...options, nudgeTimeoutMs: limits.nudgeTimeoutMs });
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
    const refused = this.options.metrics.webhookConnectionsRefused;
    // Node closes a connection over maxConnections itself and says so by 'drop'.
    server.on('drop', (data?: { remoteAddress?: string }) => {
      refused.inc({ reason: 'max_connections' });
      logger?.debug({ address: data?.remoteAddress }, 'webhook connection refused: too many open in all');
    });
    const perAddress = new ConnectionLimits({
      perAddress: limits.maxConnectionsPerAddress,
      refused: (address) => {
        refused.inc({ reason: 'per_address' });
        logger?.debug({ address }, 'webhook connection refused: too many from its address');
      },
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
    const route = grantRoute(this.path, pathname, this.options.directory);
    if (route === undefined) {
      reply(res, 404, 'not found');
      return;
    }
    if (req.method !== 'POST') {
      res.setHeader('allow', 'POST');
      reply(res, 405, 'method not allowed');
      return;
    }
    const { outcome, handshake } = await this.deliveries.handle({
      headers: req.headers,
      target: req.url,
      grant: route.grant,
      readBody: () => readBoundedBody(req, this.options.bodyLimitBytes),
      discard: () => req.resume(),
    });
    this.options.metrics.webhookDeliveries.inc({ outcome });
    if (handshake !== undefined) answerHandshake(res, handshake);
    else if (!res.headersSent) {
      if (outcome === 'unavailable') res.setHeader('retry-after', '5');
      if (outcome === 'too_large') res.setHeader('connection', 'close');
      reply(res, STATUS[outcome], outcome);
    }
  }
}

/** Answers a registration handshake (it nudges nothing: counted `ignored`). */
function answerHandshake(res: ServerResponse, answer: ChallengeAnswer): void {
  res.statusCode = answer.status;
  for (const [name, value] of Object.entries(answer.headers)) res.setHeader(name, value);
  res.setHeader('cache-control', 'no-store');
  res.end(answer.body);
}

function reply(res: ServerResponse, status: number, word: string): void {
  const body = `${JSON.stringify({ status: word })}\n`;
  res.statusCode = status;
  res.setHeader('content-type', 'application/json');
  res.setHeader('cache-control', 'no-store');
  res.setHeader('content-length', Buffer.byteLength(body));
  res.end(body);
}
