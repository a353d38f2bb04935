/**
 * The ingress in front of the connector's webhook receivers, as a deployment has one (a load balancer or an
 * ingress controller): the sandbox sends its deliveries here, and each is forwarded, raw body and headers as
 * they came, to one running connector process's receiver. Every request and its answer is kept (the judge's
 * and the attribution's input: webhook-judge.ts, webhook-attribution.ts), with the driver's own verdict on its
 * signature; genuine deliveries taken are kept too, for the replay floods (faults/webhook-faults.ts).
 *
 * Routing: by a hash of the delivery id over the processes that answer (the sender's duplicates reach the
 * same process while the first attempt is pending there), and a retry of an id already answered non-2xx goes
 * to the next process (as nginx's `proxy_next_upstream` does, so a standby's 503 or a dead process does not
 * catch every retry). A process that refused the connection or did not answer within `FORWARD_TIMEOUT_MS` is
 * skipped for `UNHEALTHY_MS` (passive health checks). With no process to reach, 502.
 */
import { appendFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createHash } from 'node:crypto';
import { Agent, request } from 'undici';
import type { AttemptOrigin, DeliveryAttempt } from './webhook-judge.js';
import { validSignature } from './webhook-signing.js';

/** A connector process's receiver. */
export interface Backend {
  name: string;
  port: number;
}

/** A request as it came (or as an attacker makes it). */
export interface CapturedRequest {
  path: string;
  headers: Record<string, string>;
  body: string;
}

export interface IngressOptions {
  port: number;
  /** The run's webhook secret: the driver's own check of each signature. */
  secret: string;
  /** The processes running now, with their receiver's port. */
  backends: () => Backend[];
  /** Where each attempt is appended (JSON lines), for a look after the run. */
  journalFile: string;
}

/** How long a forward may wait for the receiver's answer (beyond its nudge timeout, 5 s). */
const FORWARD_TIMEOUT_MS = 8000;
/** How long a process that failed a forward is skipped. */
const UNHEALTHY_MS = 2000;
/** Genuine deliveries taken, kept for replays. */
const CAPTURED = 500;

export class WebhookIngress {
  readonly attempts: DeliveryAttempt[] = [];
  /** Genuine deliveries taken (202), the newest last: what an attacker on the wire could capture. */
  readonly captured: { request: CapturedRequest; process: string; takenAtMs: number }[] = [];
  private readonly agent = new Agent({ connections: 32, keepAliveTimeout: 4000 });
  private readonly unhealthyUntil = new Map<string, number>();
  /** Per delivery id: its attempts answered non-2xx so far (the next retry goes to the next process). */
  private readonly failedTries = new Map<string, number>();
  private server: Server | null = null;
  private pending = 0;

  constructor(private readonly options: IngressOptions) {}

  get url(): string {
    return `http://127.0.0.1:${this.options.port}/webhooks/calls`;
  }

  /** Requests being forwarded now. */
  get inFlight(): number {
    return this.pending;
  }

  async start(): Promise<void> {
    const server = createServer((req, res) => void this.onRequest(req, res));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.options.port, '127.0.0.1', () => resolve());
    });
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (server !== null) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    await this.agent.close();
  }

  /** Per location, when the sender's genuine deliveries naming it were taken (202), in order. */
  takenByLocation(): Map<string, number[]> {
    const byLocation = new Map<string, number[]>();
    for (const a of this.attempts)
      if (a.origin === 'sender' && a.signed && a.status === 202 && a.locationUid !== null)
        byLocation.set(a.locationUid, [...(byLocation.get(a.locationUid) ?? []), a.answeredAtMs]);
    return byLocation;
  }

  /** The process that took the newest genuine delivery; null when none was taken yet. */
  lastTaker(): string | null {
    return this.captured.at(-1)?.process ?? null;
  }

  /**
   * Forwards one request and records it. `to`: a process by name (an attacker aiming at one instance); absent,
   * the routing of the module comment.
   */
  async forward(captured: CapturedRequest, origin: AttemptOrigin, to?: string): Promise<DeliveryAttempt> {
    const receivedAtMs = Date.now();
    const id = captured.headers['webhook-id'] ?? null;
    const signed = validSignature(this.options.secret, captured.headers, captured.body);
    const event = parseEvent(captured.body);
    const backend = this.route(id, to);
    this.pending++;
    let status = 502;
    let outcome: string | null = null;
    let answeredBy: string | null = null;
    try {
      if (backend !== null) {
        try {
          const response = await request(`http://127.0.0.1:${backend.port}${captured.path}`, {
            method: 'POST',
            headers: captured.headers,
            body: captured.body,
            dispatcher: this.agent,
            headersTimeout: FORWARD_TIMEOUT_MS,
            bodyTimeout: FORWARD_TIMEOUT_MS,
          });
          const text = await response.body.text();
          status = response.statusCode;
          answeredBy = backend.name;
          outcome = parseOutcome(text);
        } catch (error) {
          status = (error as { code?: string }).code === 'UND_ERR_HEADERS_TIMEOUT' ? 504 : 502;
          this.unhealthyUntil.set(backend.name, Date.now() + UNHEALTHY_MS);
        }
      }
    } finally {
      this.pending--;
    }
    const attempt: DeliveryAttempt = {
      origin,
      receivedAtMs,
      answeredAtMs: Date.now(),
      id,
      uid: event.uid,
      locationUid: event.locationUid,
      signed,
      process: answeredBy,
      forwardedTo: backend?.name ?? null,
      status,
      outcome,
    };
    this.attempts.push(attempt);
    if (id !== null && (status < 200 || status >= 300))
      this.failedTries.set(id, (this.failedTries.get(id) ?? 0) + 1);
    if (origin === 'sender' && signed && status === 202 && answeredBy !== null) {
      this.captured.push({ request: captured, process: answeredBy, takenAtMs: attempt.answeredAtMs });
      if (this.captured.length > CAPTURED) this.captured.shift();
    }
    appendFileSync(this.options.journalFile, `${JSON.stringify(attempt)}\n`);
    return attempt;
  }

  private route(id: string | null, to: string | undefined): Backend | null {
    const all = this.options.backends().sort((a, b) => a.name.localeCompare(b.name));
    if (to !== undefined) return all.find((b) => b.name === to) ?? null;
    const now = Date.now();
    const healthy = all.filter((b) => (this.unhealthyUntil.get(b.name) ?? 0) <= now);
    const pool = healthy.length > 0 ? healthy : all;
    if (pool.length === 0) return null;
    const hash = createHash('sha256')
      .update(id ?? String(Math.random()))
      .digest()
      .readUInt32BE(0);
    const tries = id === null ? 0 : (this.failedTries.get(id) ?? 0);
    return pool[(hash + tries) % pool.length] ?? null;
  }

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers))
      if (typeof value === 'string' && !HOP_BY_HOP.has(name)) headers[name] = value;
    const attempt = await this.forward(
      { path: req.url ?? '/', headers, body: Buffer.concat(chunks).toString('utf8') },
      'sender',
    );
    res.statusCode = attempt.status;
    res.setHeader('content-type', 'application/json');
    res.end(`${JSON.stringify({ status: attempt.outcome ?? 'no_backend' })}\n`);
  }
}

/** Not forwarded: they describe the hop to the ingress, not the request (the forward sets its own length). */
const HOP_BY_HOP = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive']);

function parseEvent(body: string): { uid: string | null; locationUid: string | null } {
  try {
    const event = JSON.parse(body) as { data?: { uid?: unknown; locationUid?: unknown } };
    const uid = event.data?.uid;
    const locationUid = event.data?.locationUid;
    return {
      uid: typeof uid === 'string' ? uid : null,
      locationUid: typeof locationUid === 'string' ? locationUid : null,
    };
  } catch {
    return { uid: null, locationUid: null };
  }
}

function parseOutcome(text: string): string | null {
  try {
    const status = (JSON.parse(text) as { status?: unknown }).status;
    return typeof status === 'string' ? status : null;
  } catch {
    return null;
  }
}
