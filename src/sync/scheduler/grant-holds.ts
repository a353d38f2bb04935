/**
 * Whether a rate-limit scope (a grant) is held now: the one question the scheduler, its due queue and its
 * backfill queue ask before giving a location of that scope a worker or a read-ahead. Pure.
 */
import type { RateLimitScopes } from '../ports.js';

/** When `scope`'s hold ends, if it is held at `nowMs` (its end is later); null when it is not held now. */
export function holdEndAt(
  scopes: Pick<RateLimitScopes, 'heldUntil'>,
  scope: string,
  nowMs: number,
): number | null {
  const until = scopes.heldUntil(scope);
  return until !== null && until > nowMs ? until : null;
}
