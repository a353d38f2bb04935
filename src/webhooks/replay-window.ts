/**
 * The keys of deliveries already taken (a signed id, or a digest of the signed content: signature/verdict.ts),
 * so a replayed delivery (an attacker's, or the API's duplicate) nudges nothing twice. Bounded memory: a key
 * is kept `keepMs` and at most `maxEntries` keys are kept; over that the oldest goes first. An entry evicted
 * by count before its time could be replayed once more: size the window above the deliveries expected in
 * `keepMs`.
 *
 * In distributed mode the window also holds the keys other instances took: each instance's receiver shares
 * the key of a delivery it takes with its nudges (kafka/nudges/nudge-topic.ts), and every instance's nudge reader
 * enters them here (`recordShared`), dated when the other instance verified the delivery. A replay sent to another
 * instance is then refused once that instance has read the original's nudge.
 *
 * Contract: `now` never decreases between calls (the injected clock's). Entries stand in the order they were
 * entered: a local key's time is its place's, a shared key may be a little older than the ones before it, so
 * eviction drops expired entries from the front (oldest-first-map.ts) and `has` checks the entry's own time.
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

  /** Whether `id` was recorded (here or, shared, by another instance) within `keepMs` of `nowMs`. */
  has(id: string, nowMs: number): boolean {
    this.evictExpired(nowMs);
    const at = this.seen.get(id);
    return at !== undefined && !this.expired(at, nowMs);
  }

  /**
   * Records `id` as taken at `nowMs`. The receiver calls it once the delivery's nudge is taken (or the delivery
   * was ignored), never before: a delivery whose nudge was not taken stays retryable.
   */
  record(id: string, nowMs: number): void {
    this.evictExpired(nowMs);
    this.seen.set(id, nowMs);
  }

  /**
   * Enters `id`, taken by an instance (this one's own come back too) that verified it at `atMs`: kept `keepMs`
   * from `atMs`, like a local key from its time, whenever it is read. Called by the nudge reader for each key a
   * record shares. A key held already keeps its place and time (a fan-out delivery's nudges carry one key many
   * times); a key expired already is left out (a reader that resumes far behind).
   */
  recordShared(id: string, atMs: number, nowMs: number): void {
    this.evictExpired(nowMs);
    if (this.expired(atMs, nowMs) || this.has(id, nowMs)) return;
    this.seen.set(id, atMs);
  }

  get size(): number {
    return this.seen.size;
  }

  private expired(atMs: number, nowMs: number): boolean {
    return nowMs - atMs > this.options.keepMs;
  }

  private evictExpired(nowMs: number): void {
    this.seen.dropOldestWhile((at) => this.expired(at, nowMs));
  }
}
