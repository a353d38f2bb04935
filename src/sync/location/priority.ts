/**
 * Which of a location's requests are `live` (go first at the API's rate limiter) and which `backfill`.
 * Pure. A location is live once it is caught up: it completed a traversal in this process, or its offset's
 * since is recent (it was caught up before a restart). Its polls and their single calls then go before the
 * pages of locations still reading history, so a tight budget delays history, not the present. A split
 * location's lanes (lanes.ts) need no rule: its live lane is live, its history lane backfill.
 */
import { parseInstant } from '../../time/instant.js';
import type { RequestHint } from '../model.js';

/** A since this close to now marks a location that was caught up when it last stopped. */
export const LIVE_SINCE_WINDOW_MS = 15 * 60_000;

/** The hint of live requests: caught-up locations' polls, a split location's live lane, the split check. */
export const LIVE_HINT: RequestHint = Object.freeze({ priority: 'live' });
/** The hint of backfill requests: locations still reading history, a split location's history lane. */
export const BACKFILL_HINT: RequestHint = Object.freeze({ priority: 'backfill' });

export function requestHint(traversalsCompleted: number, since: string | null, nowMs: number): RequestHint {
  if (traversalsCompleted > 0) return LIVE_HINT;
  const at = since === null ? null : parseInstant(since);
  return at !== null && nowMs - at.epochSeconds * 1000 <= LIVE_SINCE_WINDOW_MS ? LIVE_HINT : BACKFILL_HINT;
}
