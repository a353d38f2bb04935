/**
 * The sandbox's fault settings outside fault windows: the low background rate of the fault phase (a flaky but
 * working API), and none at all (settling).
 */

/** Faults the sandbox applies in the background during the fault phase (a flaky but working API). */
export function backgroundFaults(seed: number): Record<string, unknown> {
  return {
    seed,
    latency: { medianMs: 3, p99Ms: 60 },
    rateLimitRate: 0.01,
    retryAfterSeconds: 1,
    serverErrorRate: 0.005,
    dropConnectionRate: 0.001,
    malformedJsonRate: 0.001,
  };
}

/** Every sandbox fault off. */
export const NO_FAULTS = {
  latency: null,
  rateLimitRate: 0,
  serverErrorRate: 0,
  dropConnectionRate: 0,
  malformedJsonRate: 0,
  accessTokenEarlyExpiryRate: 0,
  refreshTokenRevocationRate: 0,
  cursorTtlMs: 24 * 3600_000,
  cursorRejection: null,
  cursorRejectionRate: 0,
  singleCallFailures: [],
  singleCallVersionSkewRate: 0,
  errorBody: null,
  rateLimit: null,
  grantQuotaSpent: null,
} as const;
