/**
 * A map of at most `capacity` entries that lets the oldest go first: entries stand in the order they were set
 * (or, with `touch`, last read), oldest at the front, so eviction and expiry look only at the front. The replay
 * window (keys by when they were taken), the uid index (least recently used first) and the delivery ledger
 * (announcements and unannounced changes by age) each keep their bounded memory in one.
 *
 * Contract: `set` makes the key the newest entry (a key set again moves to the back) and evicts from the front
 * until `capacity` holds, answering how many it evicted; nothing else evicts by count.
 */
export class OldestFirstMap<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError(`a bounded map needs a capacity >= 1, got ${capacity}`);
  }

  get size(): number {
    return this.entries.size;
  }

  has(key: K): boolean {
    return this.entries.has(key);
  }

  /** The value of `key`, its place unchanged. */
  get(key: K): V | undefined {
    return this.entries.get(key);
  }

  /** The value of `key`, which becomes the newest entry (a read counts as a use). */
  touch(key: K): V | undefined {
    const value = this.entries.get(key);
    if (value !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, value);
    }
    return value;
  }

  /** Sets `key` as the newest entry; answers how many of the oldest were evicted to stay within capacity. */
  set(key: K, value: V): number {
    this.entries.delete(key);
    this.entries.set(key, value);
    let evicted = 0;
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= this.capacity) break;
      this.entries.delete(oldest);
      evicted += 1;
    }
    return evicted;
  }

  delete(key: K): boolean {
    return this.entries.delete(key);
  }

  /** Removes entries from the front while `expired` says so; answers how many it removed. */
  dropOldestWhile(expired: (value: V, key: K) => boolean): number {
    let dropped = 0;
    for (const [key, value] of this.entries) {
      if (!expired(value, key)) break;
      this.entries.delete(key);
      dropped += 1;
    }
    return dropped;
  }
}
