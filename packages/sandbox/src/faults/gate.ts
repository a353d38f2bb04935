/**
 * Applies the request-level faults of one faultable request: draws its plan, waits the added latency,
 * and answers 429 / 5xx instead of the handler when the plan says so.
 *
 * Contract: returns the plan when the handler should go on (it then applies the token and body faults),
 * or null when a response was already sent.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SandboxContext } from '../context.js';
import { planFaults, quotaSpentFor, type FaultPlan } from './faults.js';
import {
  admit,
  freshLimitState,
  rateLimitHeaders,
  retryAfterValue,
  type RateLimitSettings,
} from './rate-limit.js';
import type { BodyFaults } from '../http/respond.js';

/**
 * The key of a request's rate-limit state: the whole sandbox, its bearer token, or the token's client.
 * An unknown token shares one key (it is refused by authentication after the limit, as a gateway would).
 */
function limitKey(
  ctx: SandboxContext,
  req: IncomingMessage | undefined,
  per: RateLimitSettings['per'],
): string {
  if (per === undefined || per === 'sandbox' || req === undefined) return 'sandbox';
  const token = /^bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
  if (token === undefined) return 'anonymous';
  if (per === 'token') return `token:${token}`;
  const check = ctx.grants.checkAccessToken(token);
  return check.ok ? `client:${check.entry.clientId}` : 'anonymous';
}

export async function enterFaultGate(
  ctx: SandboxContext,
  res: ServerResponse,
  req?: IncomingMessage,
): Promise<FaultPlan | null> {
  const limit = ctx.faults.rateLimit;
  // The sandbox clock: advancing it refills the buckets and ends quota windows, and the epoch forms of
  // the announced reset and Retry-After read on it.
  const now = ctx.clock.nowMs();
  const retryAfter = (seconds: number) => retryAfterValue(seconds, ctx.faults.retryAfterForm, now);
  if (limit !== null) {
    const key = limitKey(ctx, req, limit.per);
    let state = ctx.rateLimits.get(key);
    if (state === undefined) {
      state = freshLimitState(limit, now);
      ctx.rateLimits.set(key, state);
    }
    const admission = admit(state, limit, now);
    const announced = rateLimitHeaders(limit, admission, now);
    if (!admission.ok) {
      ctx.stats.faults.rateLimited++;
      if (admission.reason === 'quota') ctx.stats.faults.quotaExhausted++;
      ctx.respond.apiError(
        res,
        429,
        admission.reason === 'quota' ? 'quota_exhausted' : 'rate_limited',
        admission.reason === 'quota'
          ? 'request quota exhausted; retry after the given delay'
          : 'rate limit exceeded; retry after the given delay',
        { 'retry-after': retryAfter(admission.retryAfterSeconds), ...announced },
      );
      return null;
    }
    for (const [name, value] of Object.entries(announced)) res.setHeader(name, value);
  }
  const plan = planFaults(ctx.faults, ctx.faultSeq++);
  if (plan.delayMs > 0) {
    ctx.stats.faults.delayed++;
    await delay(plan.delayMs);
  }
  if (plan.reject !== null) {
    const { status, retryAfterSeconds } = plan.reject;
    const headers: Record<string, string> =
      status === 429 ? { 'retry-after': retryAfter(retryAfterSeconds ?? 1) } : {};
    if (status === 429) ctx.stats.faults.rateLimited++;
    else ctx.stats.faults.serverErrors++;
    const errorBody = ctx.faults.errorBody;
    if (errorBody !== null) {
      for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
      ctx.respond.canned(res, { status, ...errorBody });
    } else if (status === 429) {
      ctx.respond.apiError(
        res,
        429,
        'rate_limited',
        'too many requests; retry after the given delay',
        headers,
      );
    } else {
      ctx.respond.apiError(
        res,
        status,
        'server_error',
        'the server failed to handle the request (injected fault)',
      );
    }
    return null;
  }
  return plan;
}

/**
 * faults.grantQuotaSpent: answers 429 quota_exhausted when `locationUid`'s grant has its quota spent.
 * Returns true when it answered (the handler stops), false when the request goes on.
 */
export function answerSpentQuota(ctx: SandboxContext, res: ServerResponse, locationUid: string): boolean {
  const seconds = quotaSpentFor(ctx.faults, locationUid);
  if (seconds === null) return false;
  ctx.stats.faults.rateLimited++;
  ctx.stats.faults.quotaExhausted++;
  ctx.respond.apiError(
    res,
    429,
    'quota_exhausted',
    "the grant's request quota is spent; retry after the given delay",
    { 'retry-after': retryAfterValue(seconds, ctx.faults.retryAfterForm, ctx.clock.nowMs()) },
  );
  return true;
}

/** The response-level half of a plan, wired to the stats. */
export function bodyFaults(ctx: SandboxContext, plan: FaultPlan | null): BodyFaults | undefined {
  if (plan === null) return undefined;
  return {
    drop: plan.drop,
    malformed: plan.malformed,
    onApplied: (kind) => {
      ctx.stats.faults[kind]++;
    },
  };
}

/** A plan with nothing in it, for requests faults do not apply to. */
export const NO_FAULTS: FaultPlan = {
  delayMs: 0,
  reject: null,
  drop: false,
  malformed: false,
  expireToken: false,
  revokeRefreshToken: false,
  rejectCursor: false,
};
