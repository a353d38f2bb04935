/**
 * What "can heal" means for an error that stopped a location, in one place (docs/sync.md "Stopped
 * locations heal" documents the same table).
 *
 * A location is stopped by a fatal error: one that retrying at once will not fix (a 403, a cursor loop, a
 * revoked grant, a 400 on a first page...). Nearly all of them name a condition outside this process
 * that a person or the calls service can change without touching the connector: access granted again,
 * the API's bug fixed, `auth login` run again. So a stopped location is retried later with a capped,
 * jittered exponential backoff (`poll.stoppedRetry`), and resumes from its stored offset when the
 * condition is gone. Three kinds:
 *
 * - `heals`: retried with the growing backoff (1 minute doubling to 1 hour by default);
 * - `paused`: waiting for a person's action that the connector can see cheaply, without a request to the
 *   calls API (a new grant in the token store): retried at the initial delay, never slower, so the
 *   location resumes within about a minute of `auth login`;
 * - `never`: only a restart (with a changed configuration or a fixed connector) can help: programmer
 *   errors (anything that is not a ConnectorError is a bug and is never retried, see errors/) and the
 *   codes the catalogue marks `never`. The location stays stopped, the alert fires, the others go on; when every
 *   location is stopped this way the process exits 1 (ALL_LOCATIONS_STOPPED), since only a restart helps.
 *
 * Configuration errors never get here: they exit 2 at start.
 */
import { ConnectorError, ERROR_CODES, type ErrorCodeEntry } from '../../errors/index.js';
import { backoffDelayMs, type Backoff } from '../../time/backoff.js';

export type Healing = 'heals' | 'paused' | 'never';

/**
 * How a location stopped by `error` heals (see the module comment). The exceptions to `heals` are the
 * catalogue's `healing` entries (errors/codes.ts): `paused` for codes whose location waits for a new grant
 * in the token store (AUTH_GRANT_REVOKED, AUTH_NO_GRANT), `never` for codes naming a setting read once at
 * start (AUTH_CLIENT_REJECTED: the client id/secret; AUTH_STATIC_TOKEN_REJECTED: `auth.staticToken`).
 */
export function healingOf(error: unknown): Healing {
  if (!(error instanceof ConnectorError)) return 'never';
  const entry: ErrorCodeEntry = ERROR_CODES[error.code];
  return entry.healing ?? 'heals';
}

/** The backoff of stopped locations (config `poll.stoppedRetry`): time/backoff.ts's, with partial jitter. */
export interface StoppedRetryPolicy extends Backoff {
  /** Fraction of the delay taken off at random, in [0, 1]: 0.2 retries within 80-100% of the delay. */
  jitter: number;
}

/** The defaults of `poll.stoppedRetry`: the config schema takes them from here (the core imports no config). */
export const DEFAULT_STOPPED_RETRY: StoppedRetryPolicy = Object.freeze({
  initialDelayMs: 60_000,
  maxDelayMs: 3_600_000,
  multiplier: 2,
  jitter: 0.2,
});

/**
 * The wait before retrying a location stopped `stops` times in a row (1 for the first stop): the one backoff
 * formula (time/backoff.ts), not growing for `paused` (multiplier 1: the initial delay, never slower).
 * Jitter only shortens the wait (never below `1 - jitter` of it), so locations stopped by one outage do
 * not all come back in the same second, and the cap stays a cap; at least 1 ms.
 *
 * @param random a number in [0, 1), injected so tests are deterministic: 0 waits the whole delay (the jitter
 *   is taken off the delay, so the backoff's random share is drawn as 1 - random).
 */
export function stoppedRetryDelayMs(
  policy: StoppedRetryPolicy,
  healing: Exclude<Healing, 'never'>,
  stops: number,
  random: number,
): number {
  if (!Number.isInteger(stops) || stops < 1)
    throw new RangeError(`stops must be an integer >= 1, got ${stops}`);
  const growth = healing === 'paused' ? { ...policy, multiplier: 1 } : policy;
  return Math.max(1, backoffDelayMs(growth, stops, 1 - random));
}
