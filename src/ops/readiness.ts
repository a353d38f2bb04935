/**
 * Readiness: "can this instance do its job right now?" — Kafka reachable, schema registry reachable,
 * a grant able to produce a token. Answered by `/readyz` on the metrics port.
 *
 * Checks are injected functions; this module only runs them, bounded in time, and caches the verdict
 * briefly. Why the cache: orchestrators, load balancers and people with `watch curl` may probe many
 * times a second, and each probe must not become a Kafka metadata request. Concurrent probes while an
 * evaluation is running share it (single flight).
 */
import { scrubSecretsInText } from '../logging/scrub-text.js';
import { systemClock, TIMED_OUT, withTimeout, type Clock } from '../time/clock.js';

/** What one check reports. `detail` says why it failed (or what it saw); it must hold no secrets. */
export interface ReadinessResult {
  name: string;
  ok: boolean;
  detail?: string;
}

/** A readiness check. May throw or hang: both count as "not ready" (see `Readiness`). */
export type ReadinessCheck = () => Promise<ReadinessResult>;

/** A check with a name known up front, so a check that throws or times out is reported under it. */
export interface NamedReadinessCheck {
  name: string;
  check: ReadinessCheck;
}

export interface ReadinessReport {
  ok: boolean;
  checks: ReadinessResult[];
}

export interface ReadinessOptions {
  /** A check not settled within this is reported failed ("timed out"). Default 2,000 ms. */
  timeoutMs?: number;
  /** A verdict is reused for this long. Default 5,000 ms; 0 evaluates on every call. */
  cacheMs?: number;
  /** Where cache ages are read and check timeouts run (default: the system clock). */
  clock?: Clock;
}

export class Readiness {
  private readonly checks: NamedReadinessCheck[] = [];
  private readonly timeoutMs: number;
  private readonly cacheMs: number;
  private readonly clock: Clock;
  private cached: { report: ReadinessReport; at: number } | undefined;
  private inFlight: Promise<ReadinessReport> | undefined;

  constructor(
    checks: ReadonlyArray<ReadinessCheck | NamedReadinessCheck> = [],
    options: ReadinessOptions = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? 2_000;
    this.cacheMs = options.cacheMs ?? 5_000;
    this.clock = options.clock ?? systemClock;
    if (!Number.isFinite(this.timeoutMs) || this.timeoutMs <= 0) {
      throw new RangeError(`readiness timeoutMs must be a positive number, got ${this.timeoutMs}`);
    }
    if (!Number.isFinite(this.cacheMs) || this.cacheMs < 0) {
      throw new RangeError(`readiness cacheMs must be zero or positive, got ${this.cacheMs}`);
    }
    for (const check of checks) this.add(check);
  }

  /** Adds a check (e.g. once the Kafka admin is connected). Drops the cached verdict. */
  add(check: ReadinessCheck | NamedReadinessCheck): void {
    this.checks.push(
      typeof check === 'function' ? { name: check.name || `check${this.checks.length + 1}`, check } : check,
    );
    this.cached = undefined;
  }

  /** The current verdict: cached if fresh, else every check run in parallel. Ready with no checks. */
  async evaluate(): Promise<ReadinessReport> {
    const cached = this.cached;
    if (cached !== undefined && this.clock.now() - cached.at < this.cacheMs) return cached.report;
    if (this.inFlight !== undefined) return this.inFlight;
    const evaluation = this.runAll().then((report) => {
      this.cached = { report, at: this.clock.now() };
      return report;
    });
    this.inFlight = evaluation;
    try {
      return await evaluation;
    } finally {
      this.inFlight = undefined;
    }
  }

  private async runAll(): Promise<ReadinessReport> {
    const checks = await Promise.all(this.checks.map((named) => this.runOne(named)));
    return { ok: checks.every((c) => c.ok), checks };
  }

  private async runOne({ name, check }: NamedReadinessCheck): Promise<ReadinessResult> {
    try {
      const result = await withTimeout(this.clock, check(), this.timeoutMs, { unref: true });
      if (result === TIMED_OUT) return { name, ok: false, detail: `timed out after ${this.timeoutMs} ms` };
      return { ...result, name: result.name || name };
    } catch (error) {
      // /readyz is unauthenticated: a message that carries URL userinfo or a bearer token must not reach it.
      const message = error instanceof Error ? error.message : String(error);
      return { name, ok: false, detail: scrubSecretsInText(message) };
    }
  }
}
