/**
 * Which of a location's requests are `live` (go first at the API's rate limiter) and which `backfill`.
 * Pure. A location is live once it is caught up: it completed a traversal in this process, or its offset's
 * since is recent (it was caught up before a restart). Its polls and their single calls then go before the
 * pages of locations still reading history, so a tight budget delays history, not the present.
 */
import { parseInstant } from '../time/instant.js';
import type { RequestHint } from './ports.js';

/** A since this close to now marks a location that was caught up when it last stopped. */
export const LIVE_SINCE_WINDOW_MS = 15 * 60_000;

const LIVE: RequestHint = Object.freeze({ priority: 'live' });
const BACKFILL: RequestHint = Object.freeze({ priority: 'backfill' });

export function requestHint(traversalsCompleted: number, since: string | null, nowMs: number): RequestHint {
  if (traversalsCompleted > 0) return LIVE;
  const at = since === null ? null : parseInstant(since);
  return at !== null && nowMs - at.epochSeconds * 1000 <= LIVE_SINCE_WINDOW_MS ? LIVE : BACKFILL;
}
