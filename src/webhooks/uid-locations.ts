/**
 * Which location a call uid was last published for, so a delivery without a location (spec 6 does not say
 * payloads carry one) nudges one location instead of every location of its grant. Bounded: the most recently
 * published `capacity` uids (LRU); a uid no longer held falls back to the grant's fan-out, which costs polls,
 * never correctness.
 *
 * `UidLocationIndex` is the port: the sync/sink side feeds `recordPublished` as it publishes
 * (published-calls.ts), the webhook receiver reads `locationOf`.
 */
import { OldestFirstMap } from './oldest-first-map.js';

export interface UidLocationIndex {
  /** A record of `uid` was published for `location`. */
  recordPublished(uid: string, location: string): void;
  /** The location `uid` was last published for, if still held. */
  locationOf(uid: string): string | undefined;
}

export class LruUidLocations implements UidLocationIndex {
  /** uid -> location, least recently touched first. */
  private readonly entries: OldestFirstMap<string, string>;

  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError(`the uid index needs a capacity >= 1, got ${capacity}`);
    this.entries = new OldestFirstMap(capacity);
  }

  recordPublished(uid: string, location: string): void {
    this.entries.set(uid, location);
  }

  locationOf(uid: string): string | undefined {
    return this.entries.touch(uid);
  }

  get size(): number {
    return this.entries.size;
  }
}
