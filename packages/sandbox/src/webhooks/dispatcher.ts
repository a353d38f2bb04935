/**
 * Sends the sandbox's `call.*` webhooks: on every change of a call (admin upserts and live mode alike), one
 * signed delivery to each registered target, in the configured sender's shape (shapes.ts: Standard Webhooks by
 * default, or GitHub's, Stripe's, Slack's, a JWT, a token…), retried on a non-2xx answer or a connection error
 * with exponential backoff up to `retry.maxAttempts` attempts, each attempt signed anew (new timestamp, same
 * id, as Standard Webhooks senders do). Faults on demand (faults.ts) make deliveries drop, repeat, arrive late
 * or out of order, carry a bad signature, or be replayed as captured or with a fresh id.
 *
 * Deliveries go out concurrently and in the background: a change never waits for its webhook. `idle()` says
 * when nothing is pending (tests), `close()` cancels whatever still is.
 */
import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Random } from '../random.js';
import { callEvent, type CallEventType } from './events.js';
import {
  DEFAULT_WEBHOOK_FAULTS,
  drawFaults,
  mergeWebhookFaults,
  type WebhookFault,
  type WebhookFaultSettings,
} from './faults.js';
import { shapeSigner, type ShapeSigner, type SignedRequest, type WebhookShape } from './shapes.js';

export interface WebhookTarget {
  url: string;
  /** PEM to trust for an https:// target with a certificate of its own (e.g. self-signed). */
  caPem?: string;
}

export interface WebhookRetry {
  maxAttempts: number;
  initialDelayMs: number;
  maxDelayMs: number;
}

export interface WebhookOptions {
  /** How deliveries are signed: a sender's shape (shapes.ts); default `standard-webhooks`. */
  shape?: WebhookShape;
  /**
   * The shared secret of a symmetric shape (`whsec_<base64>` for Standard Webhooks and Svix); default a fresh
   * one. Read back what the receiver needs from `secret` (an ed25519 shape's public key).
   */
  secret?: string;
  targets?: ReadonlyArray<string | WebhookTarget>;
  /** Put `data.locationUid` in each event (default true); the real API may leave it out. */
  includeLocation?: boolean;
  retry?: Partial<WebhookRetry>;
  faults?: { rates?: Partial<Record<WebhookFault, number>>; delayMs?: number };
  /** Per attempt. */
  timeoutMs?: number;
}

export interface WebhookStats {
  /** Changes that produced an event. */
  events: number;
  /** HTTP requests sent (every attempt, duplicate and replay). */
  requests: number;
  /** Deliveries a target answered 2xx. */
  delivered: number;
  /** Deliveries given up after the last attempt. */
  failed: number;
  retries: number;
  /** Answers by status code; `error` for a connection error or timeout. */
  byStatus: Record<string, number>;
  /** Faults actually injected. */
  faults: Record<WebhookFault, number>;
}

/** One delivery as tests read it back (the last 1000 are kept). */
export interface WebhookDeliveryRecord {
  id: string;
  type: CallEventType;
  uid: string;
  target: string;
  attempts: number;
  state: 'pending' | 'delivered' | 'failed' | 'dropped';
}

/** What tests, the demo and the admin endpoint may do with a running sandbox's webhooks. */
export type SandboxWebhooks = Pick<
  WebhookDispatcher,
  | 'secret'
  | 'shape'
  | 'addTarget'
  | 'removeTargets'
  | 'targets'
  | 'setFaults'
  | 'faults'
  | 'failNext'
  | 'stats'
  | 'deliveries'
  | 'idle'
>;

const DEFAULT_RETRY: WebhookRetry = { maxAttempts: 5, initialDelayMs: 250, maxDelayMs: 10_000 };
const LOG_SIZE = 1000;

interface Outgoing {
  record: WebhookDeliveryRecord;
  target: WebhookTarget;
  body: string;
  faults: Set<WebhookFault>;
}

export class WebhookDispatcher {
  /** What the receiver verifies with: the shared secret, or an ed25519 shape's public key. */
  readonly secret: string;
  readonly shape: WebhookShape;
  private readonly signer: ShapeSigner;
  private readonly targetList: WebhookTarget[] = [];
  private readonly includeLocation: boolean;
  private readonly retry: WebhookRetry;
  private readonly timeoutMs: number;
  private faultSettings: WebhookFaultSettings;
  private readonly once: WebhookFault[] = [];
  private readonly log: WebhookDeliveryRecord[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly held = new Map<string, () => void>();
  private pending = 0;
  private idleWaiters: Array<() => void> = [];
  private closed = false;
  private readonly counters: WebhookStats = {
    events: 0,
    requests: 0,
    delivered: 0,
    failed: 0,
    retries: 0,
    byStatus: {},
    faults: { drop: 0, duplicate: 0, delay: 0, reorder: 0, badSignature: 0, replay: 0, reidentify: 0 },
  };

  constructor(
    options: WebhookOptions,
    private readonly nowMs: () => number,
    private readonly random: Random,
  ) {
    this.shape = options.shape ?? 'standard-webhooks';
    this.signer = shapeSigner(this.shape, options.secret);
    this.secret = this.signer.verificationSecret;
    this.includeLocation = options.includeLocation ?? true;
    this.retry = { ...DEFAULT_RETRY, ...options.retry };
    if (!(Number.isInteger(this.retry.maxAttempts) && this.retry.maxAttempts >= 1))
      throw new RangeError('webhook retry.maxAttempts must be an integer >= 1');
    if (!(this.retry.initialDelayMs >= 0 && this.retry.maxDelayMs >= this.retry.initialDelayMs))
      throw new RangeError('webhook retry delays must be 0 <= initialDelayMs <= maxDelayMs');
    this.timeoutMs = options.timeoutMs ?? 5_000;
    this.faultSettings = mergeWebhookFaults(DEFAULT_WEBHOOK_FAULTS, options.faults ?? {});
    for (const target of options.targets ?? []) this.addTarget(target);
  }

  addTarget(target: string | WebhookTarget): void {
    const t = typeof target === 'string' ? { url: target } : target;
    const url = new URL(t.url);
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new RangeError(`a webhook target is an http(s) URL, got ${t.url}`);
    if (!this.targetList.some((known) => known.url === t.url)) this.targetList.push(t);
  }

  removeTargets(): void {
    this.targetList.length = 0;
  }

  targets(): string[] {
    return this.targetList.map((t) => t.url);
  }

  setFaults(change: { rates?: Partial<Record<WebhookFault, number>>; delayMs?: number }): void {
    this.faultSettings = mergeWebhookFaults(this.faultSettings, change);
  }

  faults(): WebhookFaultSettings {
    return structuredClone(this.faultSettings);
  }

  /** The next delivery gets this fault (one-shot; several queue up and apply together). */
  failNext(fault: WebhookFault): void {
    this.once.push(fault);
  }

  stats(): WebhookStats {
    return structuredClone(this.counters);
  }

  deliveries(): WebhookDeliveryRecord[] {
    return this.log.map((r) => ({ ...r }));
  }

  /** Resolves once no delivery is pending (sent, retried, delayed, held or replayed). */
  idle(): Promise<void> {
    if (this.pending === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** A call changed: one event to every target. */
  emit(type: CallEventType, call: { uid: string; locationUid: string }): void {
    if (this.closed || this.targetList.length === 0) return;
    this.counters.events++;
    const body = JSON.stringify(callEvent(type, call, this.nowMs(), this.includeLocation));
    for (const target of this.targetList) {
      const record: WebhookDeliveryRecord = {
        id: `msg_${randomUUID().replaceAll('-', '')}`,
        type,
        uid: call.uid,
        target: target.url,
        attempts: 0,
        state: 'pending',
      };
      this.log.push(record);
      if (this.log.length > LOG_SIZE) this.log.shift();
      const faults = drawFaults(this.faultSettings, this.once, this.random);
      for (const fault of faults) this.counters.faults[fault]++;
      this.dispatch({ record, target, body, faults });
    }
  }

  close(): void {
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.held.clear();
    this.pending = 0;
    this.settleIdle();
  }

  private dispatch(out: Outgoing): void {
    if (out.faults.has('drop')) {
      out.record.state = 'dropped';
      return;
    }
    this.pending++;
    const send = (): void => {
      // A delivery held back (reorder) goes right after this one.
      const held = this.held.get(out.target.url);
      this.held.delete(out.target.url);
      void this.attempt(out, 1);
      held?.();
    };
    if (out.faults.has('reorder') && !this.held.has(out.target.url)) {
      let released = false;
      const release = (): void => {
        if (released) return;
        released = true;
        if (this.held.get(out.target.url) === release) this.held.delete(out.target.url);
        void this.attempt(out, 1);
      };
      this.held.set(out.target.url, release);
      this.later(this.faultSettings.delayMs, release);
      return;
    }
    if (out.faults.has('delay')) this.later(this.faultSettings.delayMs, send);
    else send();
  }

  private async attempt(out: Outgoing, attempt: number): Promise<void> {
    if (this.closed) return;
    out.record.attempts = attempt;
    const forged = attempt === 1 && out.faults.has('badSignature');
    const request = this.signer.sign({
      id: out.record.id,
      timestampSeconds: Math.floor(Date.now() / 1000),
      body: out.body,
      url: out.target.url,
      forged,
    });
    if (attempt === 1 && out.faults.has('duplicate')) {
      this.pending++;
      void this.post(out.target, request).then(() => this.done());
    }
    const status = await this.post(out.target, request);
    if (this.closed) return;
    if (status >= 200 && status < 300) {
      out.record.state = 'delivered';
      this.counters.delivered++;
      // An attacker's replays of the captured request: as it was, and with a fresh id where the shape sends one.
      if (out.faults.has('replay')) this.resend(out.target, request);
      if (out.faults.has('reidentify')) this.resend(out.target, reidentified(request));
      this.done();
      return;
    }
    if (attempt >= this.retry.maxAttempts) {
      out.record.state = 'failed';
      this.counters.failed++;
      this.done();
      return;
    }
    this.counters.retries++;
    const delay = Math.min(this.retry.initialDelayMs * 2 ** (attempt - 1), this.retry.maxDelayMs);
    this.later(delay, () => void this.attempt(out, attempt + 1));
  }

  private resend(target: WebhookTarget, request: SignedRequest): void {
    this.pending++;
    this.later(this.faultSettings.delayMs, () => {
      void this.post(target, request).then(() => this.done());
    });
  }

  /** The status of one POST; 0 on a connection error or timeout. */
  private post(target: WebhookTarget, request: SignedRequest): Promise<number> {
    this.counters.requests++;
    const { headers, body } = request;
    const url = new URL(request.url);
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolve) => {
      let settled = false;
      const count = (status: number): void => {
        if (settled) return;
        settled = true;
        const key = status === 0 ? 'error' : String(status);
        this.counters.byStatus[key] = (this.counters.byStatus[key] ?? 0) + 1;
        resolve(status);
      };
      const req = send(
        url,
        {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            ...headers,
            'content-length': Buffer.byteLength(body),
            'user-agent': 'calls-sandbox-webhooks',
          },
          timeout: this.timeoutMs,
          agent: false,
          ...(target.caPem !== undefined && { ca: target.caPem }),
        },
        (res) => {
          res.resume();
          res.on('end', () => count(res.statusCode ?? 0));
          res.on('error', () => count(0));
        },
      );
      req.on('timeout', () => req.destroy(new Error('webhook delivery timed out')));
      req.on('error', () => count(0));
      req.end(body);
    });
  }

  private later(ms: number, run: () => void): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      run();
    }, ms);
    timer.unref();
    this.timers.add(timer);
  }

  private done(): void {
    this.pending = Math.max(0, this.pending - 1);
    this.settleIdle();
  }

  private settleIdle(): void {
    if (this.pending !== 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}

/** The same signed request under a fresh id (its shape's id header), as an attacker would resend it. */
function reidentified(request: SignedRequest): SignedRequest {
  if (request.idHeader === undefined) return request;
  return {
    ...request,
    headers: { ...request.headers, [request.idHeader]: `msg_${randomUUID().replaceAll('-', '')}` },
  };
}
