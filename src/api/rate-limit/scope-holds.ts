/**
 * The rate limiters as the scheduler sees them (sync/ports.ts RateLimitScopes): which scope a location's
 * requests go to, until when a scope is held, the rate it paces at now and the live requests it granted recently. A scope no request has used yet is
 * not held and its rate is unknown (the scheduler then counts on the workers alone).
 */
import type { RateLimitScopes } from '../../sync/ports.js';
import type { RateLimiters } from './registry.js';

/** `grantOf`: the grant of a location's source (undefined: none known, the global scope). */
export function rateLimitScopes(
  limiters: RateLimiters,
  grantOf: (locationUid: string) => string | undefined,
): RateLimitScopes {
  return {
    scopeOf: (locationUid) => limiters.scopeName(grantOf(locationUid)),
    heldUntil: (scope) => limiters.existing(scope)?.heldUntil() ?? null,
    ratePerSecond: (scope) => limiters.existing(scope)?.ratePerSecond ?? null,
    liveGrantedPerSecond: (scope) => limiters.existing(scope)?.liveGrantedPerSecond ?? null,
  };
}
