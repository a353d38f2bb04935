/**
 * Applies the request-level faults of one faultable request: draws its plan, waits the added latency,
 * and answers 429 / 5xx instead of the handler when the plan says so.
 *
 * Contract: returns the plan when the handler should go on (it then applies the token and body faults),
 * or null when a response was already sent.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { ServerResponse } from 'node:http';
import type { SandboxContext } from '../context.js';
import { planFaults, type FaultPlan } from './faults.js';
import { fullBucket, takeToken } from './rate-limit.js';
import type { BodyFaults } from '../http/respond.js';

export async function enterFaultGate(ctx: SandboxContext, res: ServerResponse): Promise<FaultPlan | null> {
  const limit = ctx.faults.rateLimit;
  if (limit !== null) {
    const now = performance.now();
    ctx.rateBucket ??= fullBucket(limit, now);
    const retryAfterSeconds = takeToken(ctx.rateBucket, limit, now);
    if (retryAfterSeconds !== null) {
      ctx.stats.faults.rateLimited++;
      ctx.respond.apiError(res, 429, 'rate_limited', 'rate limit exceeded; retry after the given delay', {
        'retry-after': String(retryAfterSeconds),
      });
      return null;
    }
  }
  const plan = planFaults(ctx.faults, ctx.faultSeq++);
  if (plan.delayMs > 0) {
    ctx.stats.faults.delayed++;
    await delay(plan.delayMs);
  }
  if (plan.reject !== null) {
    const { status, retryAfterSeconds } = plan.reject;
    const headers: Record<string, string> =
      status === 429 ? { 'retry-after': String(retryAfterSeconds ?? 1) } : {};
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
