/**
 * The listing index of one location: its listable records (third-party calls excluded, unrepresentable
 * ones included because they still take a place in a page), sorted by (updatedAt, uid).
 *
 * Why a plain sorted array with binary search and splice, not a tree or a sorted-collection library:
 * reads dominate (every page is two binary searches and a slice: O(log n + page)), and writes are rare
 * (admin upserts, live mode at tens per second). A write is a binary search plus a splice, i.e. one memmove
 * of pointers: about a microsecond for the thousand calls of a benchmark location, and still well under a
 * millisecond for a location of a million. Live updates bump updatedAt to "now", so the re-insert is
 * almost always an append. The array also costs 8 bytes a record, where a tree costs a node each.
 */
import { compareKey, type CallRecord } from './call-record.js';

export class LocationIndex {
  private readonly records: CallRecord[];

  /** `records` must already be sorted by (updatedAtMs, uid); the index takes ownership of the array. */
  constructor(records: CallRecord[] = []) {
    this.records = records;
  }

  get size(): number {
    return this.records.length;
  }

  at(i: number): CallRecord | undefined {
    return this.records[i];
  }

  /** First position whose key is >= (ms, uid). Use uid '' for "the first record at or after ms". */
  lowerBound(ms: number, uid: string): number {
    return this.search(ms, uid, false);
  }

  /** First position whose key is > (ms, uid). */
  upperBound(ms: number, uid: string): number {
    return this.search(ms, uid, true);
  }

  /** Binary search for the first key > (ms, uid) when `strict`, else >= (ms, uid). */
  private search(ms: number, uid: string, strict: boolean): number {
    let lo = 0;
    let hi = this.records.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const r = this.records[mid] as CallRecord;
      const c = compareKey(r.updatedAtMs, r.uid, ms, uid);
      if (c < 0 || (strict && c === 0)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  insert(record: CallRecord): void {
    const last = this.records[this.records.length - 1];
    if (last === undefined || compareKey(last.updatedAtMs, last.uid, record.updatedAtMs, record.uid) < 0) {
      this.records.push(record);
      return;
    }
    this.records.splice(this.lowerBound(record.updatedAtMs, record.uid), 0, record);
  }

  /** Removes the record, found by its current key; call before changing its updatedAt. */
  remove(record: CallRecord): boolean {
    const i = this.lowerBound(record.updatedAtMs, record.uid);
    if (this.records[i] !== record) return false;
    this.records.splice(i, 1);
    return true;
  }

  /** Records from position `start` (inclusive) to `end` (exclusive), in order. */
  slice(start: number, end: number): CallRecord[] {
    return this.records.slice(start, end);
  }

  /** A copy of the records in order (for ground truth; O(n)). */
  toArray(): CallRecord[] {
    return this.records.slice();
  }
}
