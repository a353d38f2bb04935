/**
 * The operational HTTP endpoint (node:http; three routes do not need a framework), on `metrics.host`
 * and `metrics.port`:
 * - `GET /metrics`: the Prometheus exposition of the injected ConnectorMetrics registry;
 * - `GET /healthz`: liveness. 200 `ok` while the process can answer at all; an orchestrator restarts
 *   the container when this stops answering. Deliberately checks nothing external: a Kafka outage
 *   must not get a healthy connector killed in a restart loop;
 * - `GET /readyz`: readiness. 200 when every injected check passes, else 503; both with a JSON body
 *   listing each check, so `curl /readyz` says which dependency is the problem.
 *
 * - `GET /status`: the connector and each location in Kafka Connect's status shape (src/runtime/status.ts),
 *   when a status source is injected.
 *
 * Contract: `start()` resolves with the bound port (pass port 0 for an ephemeral one in tests);
 * `stop()` closes the listener and idle keep-alive sockets and resolves when closed. Only GET and HEAD
 * are served; nothing here changes state.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { FatalError } from '../errors/index.js';
import { listen, closeListener } from './listening.js';
import { Readiness, type ReadinessReport } from './readiness.js';
import type { ConnectorMetrics } from '../metrics/metrics.js';

/** The registry /metrics exposes, and the gauge of each readiness check. */
export type OpsServerMetrics = Pick<ConnectorMetrics, 'registry' | 'readinessCheck'>;

export interface MetricsServerOptions {
  metrics: OpsServerMetrics;
  /** Evaluates `/readyz`. Absent: always ready (no dependency declared). */
  readiness?: Readiness;
  host?: string;
  port?: number;
  logger?: Logger;
  /** Body of `GET /status` (JSON); absent: /status answers 404. */
  status?: () => object;
}

export interface MetricsServerAddress {
  host: string;
  port: number;
  /** Base URL, e.g. http://127.0.0.1:9464 */
  url: string;
}

export class MetricsServer {
  private readonly metrics: OpsServerMetrics;
  private readonly readiness: Readiness;
  private readonly host: string;
  private readonly port: number;
  private readonly logger: Logger | undefined;
  private readonly status: (() => object) | undefined;
  private server: Server | undefined;
  /** Names of the checks failing at the last /readyz, comma-joined; '' = ready (also the initial state). */
  private lastFailedSignature = '';

  constructor(options: MetricsServerOptions) {
    this.metrics = options.metrics;
    this.readiness = options.readiness ?? new Readiness();
    this.host = options.host ?? '127.0.0.1';
    this.port = options.port ?? 9464;
    this.logger = options.logger;
    this.status = options.status;
    if (!Number.isInteger(this.port) || this.port < 0 || this.port > 65_535) {
      throw new RangeError(`metrics port must be an integer in 0..65535, got ${this.port}`);
    }
  }

  async start(): Promise<MetricsServerAddress> {
    if (this.server !== undefined) throw new Error('MetricsServer already started');
    const server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        this.logger?.error({ err: error, path: req.url }, 'metrics endpoint failed');
        if (!res.headersSent) send(res, 500, 'text/plain; charset=utf-8', 'internal error\n');
        else res.destroy();
      });
    });
    // Scrapers keep connections open; a short idle timeout keeps stop() prompt and sockets few.
    server.keepAliveTimeout = 5_000;
    server.requestTimeout = 30_000;
    this.server = server;
    try {
      await listen(server, this.port, this.host);
    } catch (error) {
      this.server = undefined; // e.g. EADDRINUSE: leave the object startable again
      const code = (error as NodeJS.ErrnoException).code ?? String(error);
      throw new FatalError(
        'METRICS_LISTEN_FAILED',
        `cannot listen on ${this.host}:${this.port} for /metrics, /healthz and /readyz (${code}): ` +
          'set metrics.port (and metrics.host) to a free address, or metrics.enabled: false',
        { cause: error },
      );
    }
    const address = this.address();
    this.logger?.info({ url: address.url }, 'metrics and health endpoints listening');
    return address;
  }

  /** The bound address; throws before `start()`. */
  address(): MetricsServerAddress {
    const bound = this.server?.address();
    if (bound === undefined || bound === null || typeof bound === 'string')
      throw new Error('MetricsServer not started');
    const { address, port } = bound;
    const host = address.includes(':') ? `[${address}]` : address;
    return { host: address, port, url: `http://${host}:${port}` };
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (server === undefined) return;
    this.server = undefined;
    await closeListener(server);
  }

  private publishReadiness(report: ReadinessReport): void {
    for (const check of report.checks)
      this.metrics.readinessCheck.set({ check: check.name }, check.ok ? 1 : 0);
  }

  /**
   * Logs when readiness changes (and the first verdict when it is "not ready"), not on every probe: an
   * orchestrator probing every few seconds would otherwise fill the log during an outage.
   */
  private logReadinessChange(report: ReadinessReport): void {
    const failed = report.checks.filter((c) => !c.ok);
    const signature = failed.map((c) => c.name).join(',');
    if (signature === this.lastFailedSignature) return;
    if (report.ok) this.logger?.info('ready: every readiness check passes');
    else this.logger?.warn({ failed }, `not ready: ${failed.map((c) => c.name).join(', ')} failing`);
    this.lastFailedSignature = signature;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD');
      send(res, 405, 'text/plain; charset=utf-8', 'method not allowed\n');
      return;
    }
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    switch (path) {
      case '/metrics': {
        // The readiness gauge is current at every scrape (the verdict is cached, so this costs no extra probes).
        this.publishReadiness(await this.readiness.evaluate());
        const body = await this.metrics.registry.metrics();
        send(res, 200, this.metrics.registry.contentType, body);
        return;
      }
      case '/healthz':
        send(res, 200, 'text/plain; charset=utf-8', 'ok\n');
        return;
      case '/readyz': {
        const report = await this.readiness.evaluate();
        this.publishReadiness(report);
        this.logReadinessChange(report);
        send(
          res,
          report.ok ? 200 : 503,
          'application/json',
          `${JSON.stringify({ status: report.ok ? 'ready' : 'not ready', ...report })}\n`,
        );
        return;
      }
      case '/status':
        if (this.status !== undefined) {
          send(res, 200, 'application/json', `${JSON.stringify(this.status())}\n`);
          return;
        }
        send(res, 404, 'text/plain; charset=utf-8', 'not found: try /metrics, /healthz or /readyz\n');
        return;
      default:
        send(
          res,
          404,
          'text/plain; charset=utf-8',
          'not found: try /metrics, /healthz, /readyz or /status\n',
        );
    }
  }
}

function send(res: ServerResponse, status: number, contentType: string, body: string): void {
  res.statusCode = status;
  res.setHeader('content-type', contentType);
  res.setHeader('cache-control', 'no-store');
  res.setHeader('content-length', Buffer.byteLength(body));
  res.end(res.req.method === 'HEAD' ? undefined : body);
}
