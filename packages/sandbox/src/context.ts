/**
 * The state one running sandbox shares between its handlers: data, grants, clock, faults, stats.
 * Built once by startSandbox(); handlers receive it and never reach for globals.
 */
import type { SandboxClock } from './clock.js';
import type { CallStore } from './data/store.js';
import type { FaultSettings } from './faults/faults.js';
import type { LimitState } from './faults/rate-limit.js';
import type { Responder } from './http/respond.js';
import type { GrantStore } from './oauth/grants.js';

export interface SandboxClient {
  clientId: string;
  clientSecret: string;
  redirectUri: string;
}

/** Counters tests and the benchmark assert on. Reset only by restarting the sandbox. */
export interface SandboxStats {
  /** Every HTTP request, admin ones included. */
  requests: number;
  /** POST /oauth/token. */
  tokenRequests: number;
  /** GET and POST /oauth/authorize. */
  authorizeRequests: number;
  /** GET /v4/calls. */
  listRequests: number;
  /** GET /v4/calls/{uid}. */
  getRequests: number;
  adminRequests: number;
  /** Responses by status code. */
  byStatus: Record<string, number>;
  /** Faults actually injected. */
  faults: {
    delayed: number;
    rateLimited: number;
    /** Of rateLimited: refused because the quota (faults.rateLimit.quota) was used up. */
    quotaExhausted: number;
    serverErrors: number;
    dropped: number;
    malformed: number;
    tokensExpiredEarly: number;
    refreshTokensRevoked: number;
    cursorsRejected: number;
    singleCallFailures: number;
    versionSkews: number;
  };
  live: { updates: number; creates: number };
}

export function emptyStats(): SandboxStats {
  return {
    requests: 0,
    tokenRequests: 0,
    authorizeRequests: 0,
    listRequests: 0,
    getRequests: 0,
    adminRequests: 0,
    byStatus: {},
    faults: {
      delayed: 0,
      rateLimited: 0,
      quotaExhausted: 0,
      serverErrors: 0,
      dropped: 0,
      malformed: 0,
      tokensExpiredEarly: 0,
      refreshTokensRevoked: 0,
      cursorsRejected: 0,
      singleCallFailures: 0,
      versionSkews: 0,
    },
    live: { updates: 0, creates: 0 },
  };
}

export interface SandboxContext {
  readonly client: SandboxClient;
  readonly store: CallStore;
  readonly grants: GrantStore;
  readonly clock: SandboxClock;
  readonly stats: SandboxStats;
  readonly respond: Responder;
  /** HMAC key of listing cursors (random per start: cursors do not survive a restart). */
  readonly cursorKey: Buffer;
  readonly autoApprove: boolean;
  /** Login of the sandbox user on the authorization page. */
  readonly user: { username: string; password: string };
  /** Header value required on /_sandbox/ requests; null = open. */
  readonly adminKey: string | null;
  /** Current fault settings (replaced as a whole by setFaults). */
  faults: FaultSettings;
  /** Sequence number of the next faultable request. */
  faultSeq: number;
  /** State of faults.rateLimit per key (the sandbox, a token or a client); cleared when the limit changes. */
  rateLimits: Map<string, LimitState>;
  /** Single-call requests seen per uid (singleCallFailures count attempts per call). */
  readonly singleCallAttempts: Map<string, number>;
}
