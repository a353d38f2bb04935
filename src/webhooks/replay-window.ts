/**
 * The keys of deliveries already taken (a signed id, or a digest of the signed content: signature/verdict.ts),
 * so a replayed delivery (an attacker's, or the API's duplicate) nudges nothing twice. Bounded memory: a key
 * is kept `keepMs` and at most `maxEntries` keys are kept; over that the oldest goes first. An entry evicted
 * by count before its time could be replayed once more: size the window above the deliveries expected in
 * `keepMs`.
 *
 * Contract: `now` never decreases between calls (the injected clock's); ids are kept in the order they were
 * recorded, which is also their expiry order, so eviction looks only at the front (oldest-first-map.ts).
 */
import { OldestFirstMap } from './oldest-first-map.js';

/**
 * How long a key must be kept: as long as its delivery could still be accepted. With a signed timestamp that
 * is twice the tolerance (a delivery is accepted while |now - timestamp| <= tolerance, and it was taken at
 * most one tolerance before its timestamp), after which replays are refused as stale. With replay protection
 * waived (a scheme that signs no timestamp) nothing ever makes a delivery stale: keys are kept until the
 * count evicts them (Infinity).
 */
export function replayKeepMs(toleranceMs: number, waived: boolean): number {
  return waived ? Number.POSITIVE_INFINITY : 2 * toleranceMs;
}

export interface ReplayWindowOptions {
  keepMs: number;
  maxEntries: number;
}

export class ReplayWindow {
  /** id -> when it was recorded (epoch ms), in recording order. */
  private readonly seen: OldestFirstMap<string, number>;

  constructor(private readonly options: ReplayWindowOptions) {
    if (!(options.keepMs >= 0) || !Number.isInteger(options.maxEntries) || options.maxEntries < 1)
      throw new RangeError('a replay window needs keepMs >= 0 and maxEntries >= 1');
    this.seen = new OldestFirstMap(options.maxEntries);
  }

  /** Whether `id` was recorded within the window. */
  has(id: string, nowMs: number): boolean {
    this.evictExpired(nowMs);
    return this.seen.has(id);
  }

  /**
   * Records `id` as taken at `nowMs`. The receiver calls it once the delivery's nudge is taken (or the delivery
   * was ignored), never before: a delivery whose nudge was not taken stays retryable.
   */
  record(id: string, nowMs: number): void {
    this.evictExpired(nowMs);
    this.seen.set(id, nowMs);
  }

  get size(): number {
    return this.seen.size;
  }

  private evictExpired(nowMs: number): void {
    this.seen.dropOldestWhile((at) => nowMs - at > this.options.keepMs);
  }
}
