/**
 * One page of the listing, read from the per-location indexes. Pure over its inputs.
 *
 * Cost: one binary search per location to place the start, then O(page · log k) to merge k locations
 * (k = 1 with locationUid, the common case: a slice). desc pages with several locations also pass over
 * the `offset` records before them; desc is the unsafe order the spec warns about, not a polling path.
 *
 * The page "passes" up to `limit` listable records; unrepresentable ones among them are then dropped by
 * the caller, which is why a page can hold fewer items than limit while more follow (rule 6).
 */
import { compareKey, type CallRecord } from '../data/call-record.js';
import type { LocationIndex } from '../data/location-index.js';
import type { ListingOrder } from './cursor.js';

export interface PageRequest {
  indexes: readonly LocationIndex[];
  sinceMs: number | null;
  order: ListingOrder;
  limit: number;
  /** asc: start strictly after this key. */
  after?: { ms: number; uid: string };
  /** desc: records to pass from the top. */
  offset?: number;
}

export interface PageResult {
  /** The records the page passed, in listing order, unrepresentable ones included. */
  passed: CallRecord[];
  /** Whether at least one record follows the page. */
  more: boolean;
  /** Where the next page starts (meaningful when more). */
  next: { after?: { ms: number; uid: string }; offset?: number };
}

interface Head {
  index: LocationIndex;
  pos: number;
  /** asc: exclusive upper end; desc: inclusive lower end. */
  end: number;
}

/** Binary min-heap of heads by their current record, in listing order (`sign` -1 flips it for desc). */
class HeadHeap {
  private readonly heads: Head[] = [];
  constructor(private readonly sign: 1 | -1) {}

  private key(h: Head): CallRecord {
    return h.index.at(h.pos) as CallRecord;
  }

  private less(a: Head, b: Head): boolean {
    const ra = this.key(a);
    const rb = this.key(b);
    return this.sign * compareKey(ra.updatedAtMs, ra.uid, rb.updatedAtMs, rb.uid) < 0;
  }

  get size(): number {
    return this.heads.length;
  }

  push(h: Head): void {
    const a = this.heads;
    a.push(h);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(a[i] as Head, a[p] as Head)) break;
      [a[i], a[p]] = [a[p] as Head, a[i] as Head];
      i = p;
    }
  }

  /** Takes the smallest record and advances its head. */
  take(): CallRecord | undefined {
    const a = this.heads;
    const top = a[0];
    if (top === undefined) return undefined;
    const record = this.key(top);
    top.pos += this.sign;
    const exhausted = this.sign === 1 ? top.pos >= top.end : top.pos < top.end;
    if (exhausted) {
      const last = a.pop() as Head;
      if (a.length === 0) return record;
      a[0] = last;
    }
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < a.length && this.less(a[l] as Head, a[m] as Head)) m = l;
      if (r < a.length && this.less(a[r] as Head, a[m] as Head)) m = r;
      if (m === i) break;
      [a[i], a[m]] = [a[m] as Head, a[i] as Head];
      i = m;
    }
    return record;
  }
}

export function readPage(req: PageRequest): PageResult {
  return req.order === 'asc' ? readAsc(req) : readDesc(req);
}

/** Where an ascending page starts in one location: after the cursor's position, else at since. */
function ascStart(index: LocationIndex, req: PageRequest): number {
  if (req.after !== undefined) return index.upperBound(req.after.ms, req.after.uid);
  return req.sinceMs !== null ? index.lowerBound(req.sinceMs, '') : 0;
}

function ascResult(req: PageRequest, passed: CallRecord[], more: boolean): PageResult {
  const last = passed[passed.length - 1];
  const after = last === undefined ? req.after : { ms: last.updatedAtMs, uid: last.uid };
  return { passed, more, next: after === undefined ? {} : { after } };
}

function readAsc(req: PageRequest): PageResult {
  const only = req.indexes.length === 1 ? req.indexes[0] : undefined;
  if (only !== undefined) {
    // One location (the polling case): a slice, no merge.
    const start = ascStart(only, req);
    const end = Math.min(only.size, start + req.limit);
    return ascResult(req, only.slice(start, end), end < only.size);
  }
  const heap = new HeadHeap(1);
  for (const index of req.indexes) {
    const start = ascStart(index, req);
    if (start < index.size) heap.push({ index, pos: start, end: index.size });
  }
  const passed: CallRecord[] = [];
  while (passed.length < req.limit) {
    const r = heap.take();
    if (r === undefined) break;
    passed.push(r);
  }
  return ascResult(req, passed, heap.size > 0);
}

function readDesc(req: PageRequest): PageResult {
  const offset = req.offset ?? 0;
  const heap = new HeadHeap(-1);
  for (const index of req.indexes) {
    const low = req.sinceMs !== null ? index.lowerBound(req.sinceMs, '') : 0;
    const top = index.size - 1;
    if (req.indexes.length === 1) {
      // One location: the offset is index arithmetic, no pass over skipped records.
      const pos = top - offset;
      if (pos >= low) heap.push({ index, pos, end: low });
    } else if (top >= low) {
      heap.push({ index, pos: top, end: low });
    }
  }
  if (req.indexes.length !== 1) for (let i = 0; i < offset && heap.take() !== undefined; i++);
  const passed: CallRecord[] = [];
  while (passed.length < req.limit) {
    const r = heap.take();
    if (r === undefined) break;
    passed.push(r);
  }
  return { passed, more: heap.size > 0, next: { offset: offset + passed.length } };
}
