import { describe, expect, it } from 'vitest';
import type { CallRecord } from '../../../src/data/call-record.js';
import { callRecord } from '../call-fixture.js';
import { LocationIndex } from '../../../src/data/location-index.js';
import { readPage } from '../../../src/listing/page.js';
import { createRandom } from '../../../src/random.js';

const rec = callRecord;

const a = (): LocationIndex => new LocationIndex([rec('a1', 1), rec('a2', 3), rec('a3', 5), rec('a4', 5)]);
const b = (): LocationIndex => new LocationIndex([rec('b1', 2), rec('b2', 5), rec('b3', 6)]);
const uids = (records: CallRecord[]): string[] => records.map((r) => r.uid);

describe('readPage', () => {
  it('slices one location in ascending order from since, and says whether more follow', () => {
    const page = readPage({ indexes: [a()], sinceMs: 3, order: 'asc', limit: 2 });
    expect(uids(page.passed)).toEqual(['a2', 'a3']);
    expect(page.more).toBe(true);
    expect(page.next).toEqual({ after: { ms: 5, uid: 'a3' } });
    const rest = readPage({ indexes: [a()], sinceMs: 3, order: 'asc', limit: 2, after: page.next.after });
    expect(uids(rest.passed)).toEqual(['a4']);
    expect(rest.more).toBe(false);
  });

  it('merges several locations by (updatedAt, uid)', () => {
    const page = readPage({ indexes: [a(), b()], sinceMs: null, order: 'asc', limit: 10 });
    expect(uids(page.passed)).toEqual(['a1', 'b1', 'a2', 'a3', 'a4', 'b2', 'b3']);
    expect(page.more).toBe(false);
  });

  it('walks descending by offset from the top, stopping at since', () => {
    const first = readPage({ indexes: [a(), b()], sinceMs: 3, order: 'desc', limit: 3 });
    expect(uids(first.passed)).toEqual(['b3', 'b2', 'a4']);
    expect(first.next).toEqual({ offset: 3 });
    const second = readPage({ indexes: [a(), b()], sinceMs: 3, order: 'desc', limit: 3, offset: 3 });
    expect(uids(second.passed)).toEqual(['a3', 'a2']);
    expect(second.more).toBe(false);
    const single = readPage({ indexes: [a()], sinceMs: null, order: 'desc', limit: 2, offset: 1 });
    expect(uids(single.passed)).toEqual(['a3', 'a2']);
    expect(single.more).toBe(true);
  });

  it('passes nothing with limit 0 but reports what follows, keeping the position', () => {
    const page = readPage({
      indexes: [a()],
      sinceMs: null,
      order: 'asc',
      limit: 0,
      after: { ms: 1, uid: 'a1' },
    });
    expect(page).toEqual({ passed: [], more: true, next: { after: { ms: 1, uid: 'a1' } } });
    expect(readPage({ indexes: [a()], sinceMs: 99, order: 'asc', limit: 0 }).more).toBe(false);
  });

  it('returns an empty page for no locations', () => {
    expect(readPage({ indexes: [], sinceMs: null, order: 'asc', limit: 5 })).toMatchObject({
      passed: [],
      more: false,
    });
  });
});

describe('readPage against a plain sort', () => {
  it('walks many locations page by page exactly like sorting everything, in both orders', () => {
    const random = createRandom(17);
    for (let round = 0; round < 30; round++) {
      const indexes = Array.from({ length: random.int(1, 6) }, (_, l) => {
        const records = Array.from({ length: random.int(0, 40) }, (_, i) =>
          callRecord(`${l}-${i}`, random.int(0, 30)),
        );
        records.sort((x, y) => x.updatedAtMs - y.updatedAtMs || (x.uid < y.uid ? -1 : 1));
        return new LocationIndex(records);
      });
      const sinceMs = random.chance(0.5) ? random.int(0, 30) : null;
      const all = indexes
        .flatMap((i) => i.toArray())
        .filter((r) => sinceMs === null || r.updatedAtMs >= sinceMs);
      all.sort((x, y) => x.updatedAtMs - y.updatedAtMs || (x.uid < y.uid ? -1 : 1));
      const limit = random.int(1, 7);
      for (const order of ['asc', 'desc'] as const) {
        const walked: string[] = [];
        let next: { after?: { ms: number; uid: string }; offset?: number } = {};
        for (let guard = 0; guard < 1000; guard++) {
          const page = readPage({ indexes, sinceMs, order, limit, ...next });
          walked.push(...uids(page.passed));
          if (!page.more) break;
          next = page.next;
        }
        const expected = uids(order === 'asc' ? all : [...all].reverse());
        expect(walked, `round ${round} ${order}`).toEqual(expected);
      }
    }
  });
});
