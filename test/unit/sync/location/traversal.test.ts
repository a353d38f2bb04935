import { describe, expect, it } from 'vitest';
import { EMPTY_OFFSET, type LocationOffset } from '../../../../src/sync/model.js';
import { compareDateTimes } from '../../../../src/time/instant.js';
import {
  applyPage,
  boundaryEntryBytes,
  nextPageRequest,
  restartAfterInvalidCursor,
  sameOffset,
  type PageRequest,
  type Positioned,
  type TraversalSettings,
} from '../../../../src/sync/location/traversal.js';

const LOC = '11111111-1111-1111-1111-111111111111';
const settings: TraversalSettings = { locationUid: LOC, pageSize: 3, startSince: null, boundaryCap: 100 };
const t = (second: number, fraction = '') =>
  `2024-03-01T12:00:${String(second).padStart(2, '0')}${fraction}Z`;
const rec = (uid: string, updatedAt: string): Positioned => ({ uid, updatedAt });

/**
 * A model of the listing of spec 4.3 over a fixed, sorted data set: inclusive since, asc order, cursors that
 * carry their since, pages of `limit`, and optionally short pages (items omitted as "unrepresentable" from
 * the page while the cursor still advances past them).
 */
function listing(records: Positioned[], options: { omit?: Set<string> } = {}) {
  const sorted = [...records].sort((a, b) => compareDateTimes(a.updatedAt, b.updatedAt));
  return (request: PageRequest): { items: Positioned[]; nextCursor: string | null } => {
    let since: string | null;
    let position: number;
    if (request.kind === 'next') {
      const parsed = JSON.parse(request.cursor) as { since: string | null; position: number };
      since = parsed.since;
      position = parsed.position;
    } else {
      since = request.since;
      position = 0;
    }
    const matching = sorted.filter((r) => since === null || compareDateTimes(r.updatedAt, since) >= 0);
    const slice = matching.slice(position, position + request.limit);
    const end = position + slice.length;
    return {
      items: slice.filter((r) => !(options.omit?.has(r.uid) ?? false)),
      nextCursor: end < matching.length ? JSON.stringify({ since, position: end }) : null,
    };
  };
}

/** Runs one traversal to completion through the pure rules; returns what was published and the offset. */
function traverse(
  fetch: ReturnType<typeof listing>,
  start: LocationOffset,
  options: { stopAfterPages?: number; cap?: number } = {},
): {
  published: Positioned[];
  duplicates: Positioned[];
  offset: LocationOffset;
  pages: number;
  complete: boolean;
} {
  let offset = start;
  const published: Positioned[] = [];
  const duplicates: Positioned[] = [];
  let pages = 0;
  for (;;) {
    const page = fetch(nextPageRequest(offset, settings));
    const outcome = applyPage(offset, page.items, page.nextCursor, options.cap ?? settings.boundaryCap);
    published.push(...outcome.accepted);
    duplicates.push(...outcome.duplicates);
    offset = outcome.offset;
    pages += 1;
    if (outcome.complete) return { published, duplicates, offset, pages, complete: true };
    if (options.stopAfterPages !== undefined && pages >= options.stopAfterPages)
      return { published, duplicates, offset, pages, complete: false };
  }
}

describe('nextPageRequest', () => {
  it('asks the first page of the very first run without since, ascending, for the location', () => {
    expect(nextPageRequest(EMPTY_OFFSET, settings)).toEqual({
      kind: 'first',
      locationUid: LOC,
      since: null,
      order: 'asc',
      limit: 3,
    });
  });

  it('uses the configured start time when the location has no since yet', () => {
    expect(nextPageRequest(EMPTY_OFFSET, { ...settings, startSince: t(5) })).toMatchObject({
      kind: 'first',
      since: t(5),
    });
  });

  it('uses the stored since over the start time', () => {
    expect(
      nextPageRequest({ ...EMPTY_OFFSET, since: t(9) }, { ...settings, startSince: t(5) }),
    ).toMatchObject({ since: t(9) });
  });

  it('asks later pages by cursor and limit only, the location naming whose calls come back', () => {
    expect(nextPageRequest({ ...EMPTY_OFFSET, since: t(1), cursor: 'abc' }, settings)).toEqual({
      kind: 'next',
      locationUid: LOC,
      cursor: 'abc',
      limit: 3,
    });
  });
});

describe('applyPage', () => {
  it('stores the next cursor and keeps since while the traversal goes on', () => {
    const outcome = applyPage(
      { ...EMPTY_OFFSET, since: t(0) },
      [rec('a', t(1)), rec('b', t(2))],
      'next',
      100,
    );
    expect(outcome.offset).toEqual({ since: t(0), cursor: 'next', watermark: t(2), boundary: ['b'] });
    expect(outcome.complete).toBe(false);
  });

  it('moves since to the watermark only when nextCursor is null', () => {
    const outcome = applyPage({ ...EMPTY_OFFSET, since: t(0), cursor: 'c' }, [rec('a', t(1))], null, 100);
    expect(outcome.offset).toEqual({ since: t(1), cursor: null, watermark: t(1), boundary: ['a'] });
    expect(outcome.complete).toBe(true);
  });

  it('treats an empty page with a cursor as not the end', () => {
    const outcome = applyPage(
      { ...EMPTY_OFFSET, since: t(0), watermark: t(0), boundary: ['z'] },
      [],
      'more',
      100,
    );
    expect(outcome.complete).toBe(false);
    expect(outcome.offset).toEqual({ since: t(0), cursor: 'more', watermark: t(0), boundary: ['z'] });
  });

  it('keeps since when a traversal that published nothing completes', () => {
    expect(applyPage({ ...EMPTY_OFFSET, since: t(3) }, [], null, 100).offset).toEqual({
      since: t(3),
      cursor: null,
      watermark: null,
      boundary: [],
    });
  });

  it('skips a record at the watermark whose uid is in the boundary and publishes one new at that instant', () => {
    const start = { since: t(5), cursor: null, watermark: t(5), boundary: ['a', 'b'] };
    const outcome = applyPage(start, [rec('a', t(5)), rec('b', t(5)), rec('c', t(5))], null, 100);
    expect(outcome.duplicates.map((r) => r.uid)).toEqual(['a', 'b']);
    expect(outcome.accepted.map((r) => r.uid)).toEqual(['c']);
    expect(outcome.offset.boundary).toEqual(['a', 'b', 'c']);
  });

  it('compares the boundary instant exactly, across precision and offsets', () => {
    const start = { since: t(5, '.5'), cursor: null, watermark: t(5, '.5'), boundary: ['a'] };
    const outcome = applyPage(
      start,
      [rec('a', '2024-03-01T13:00:05.500000+01:00'), rec('b', t(5, '.5000001'))],
      null,
      100,
    );
    expect(outcome.duplicates.map((r) => r.uid)).toEqual(['a']);
    expect(outcome.accepted.map((r) => r.uid)).toEqual(['b']);
    expect(outcome.offset).toMatchObject({ watermark: t(5, '.5000001'), boundary: ['b'] });
  });

  it('publishes a record at the watermark again when the boundary overflowed, and flags it', () => {
    const outcome = applyPage({ ...EMPTY_OFFSET }, [rec('a', t(1)), rec('b', t(1)), rec('c', t(1))], null, 2);
    expect(outcome.accepted).toHaveLength(3);
    expect(outcome.offset).toMatchObject({ watermark: t(1), boundary: ['a', 'b'], boundaryOverflow: true });
    const again = applyPage(outcome.offset, [rec('a', t(1)), rec('b', t(1)), rec('c', t(1))], null, 2);
    expect(again.accepted.map((r) => r.uid)).toEqual(['c']);
    expect(again.duplicates.map((r) => r.uid)).toEqual(['a', 'b']);
  });

  it('stops remembering boundary uids past the byte budget, whatever their length, and publishes them again rather than lose them', () => {
    const long = (c: string) => c.repeat(256);
    const page = [rec(long('a'), t(1)), rec(long('b'), t(1)), rec(long('c'), t(1))];
    const budget = boundaryEntryBytes(long('a'), undefined) * 2;
    const outcome = applyPage({ ...EMPTY_OFFSET }, page, null, 100, budget);
    expect(outcome.accepted).toHaveLength(3);
    expect(outcome.offset).toMatchObject({ boundary: [long('a'), long('b')], boundaryOverflow: true });
    const again = applyPage(outcome.offset, page, null, 100, budget);
    expect(again.accepted.map((r) => r.uid)).toEqual([long('c')]);
    expect(again.duplicates).toHaveLength(2);
  });

  it('counts the bytes of a fingerprint a boundary uid gains against the budget, and overflows rather than outgrow it', () => {
    // A version-1 boundary (uids without fingerprints) at its budget: the fingerprints the next page brings
    // used to be added unchecked, and the offset record could outgrow max.message.bytes.
    const start = { ...EMPTY_OFFSET, watermark: t(1), boundary: ['aaaa', 'bbbb'] };
    const full = boundaryEntryBytes('aaaa', undefined) * 2;
    const page = [
      { ...rec('aaaa', t(1)), fingerprint: 'f'.repeat(16) },
      { ...rec('bbbb', t(1)), fingerprint: 'g'.repeat(16) },
    ];
    const outcome = applyPage(start, page, null, 100, full);
    expect(outcome.accepted).toHaveLength(2);
    expect(outcome.offset.boundaryFingerprints ?? {}).toEqual({});
    expect(outcome.offset.boundaryOverflow).toBe(true);
    const roomy = applyPage(start, page, null, 100, full * 10);
    expect(roomy.offset.boundaryFingerprints).toEqual({ aaaa: 'f'.repeat(16), bbbb: 'g'.repeat(16) });
  });

  it('counts a stored boundary against the byte budget of the next page', () => {
    const start = { ...EMPTY_OFFSET, watermark: t(1), boundary: ['aaaa', 'bbbb'] };
    const full = boundaryEntryBytes('aaaa', undefined) * 2;
    const outcome = applyPage(start, [rec('cccc', t(1))], null, 100, full);
    expect(outcome.accepted.map((r) => r.uid)).toEqual(['cccc']);
    expect(outcome.offset).toMatchObject({ boundary: ['aaaa', 'bbbb'], boundaryOverflow: true });
  });

  it('clears the overflow once the watermark moves on', () => {
    const outcome = applyPage(
      { ...EMPTY_OFFSET, watermark: t(1), boundary: ['a'], boundaryOverflow: true },
      [rec('d', t(2))],
      null,
      1,
    );
    expect(outcome.offset.boundaryOverflow).toBeUndefined();
  });

  it('publishes a record older than the watermark without moving the watermark (the API broke its sort order)', () => {
    const start = { since: t(5), cursor: null, watermark: t(5), boundary: ['a'] };
    const outcome = applyPage(start, [rec('old', t(2)), rec('a', t(5))], null, 100);
    expect(outcome.accepted.map((r) => r.uid)).toEqual(['old']);
    expect(outcome.belowWatermark.map((r) => r.uid)).toEqual(['old']);
    expect(outcome.offset).toMatchObject({ watermark: t(5), boundary: ['a'] });
  });
});

describe('applyPage with fingerprints (a second change at one instant)', () => {
  const fp = (uid: string, updatedAt: string, fingerprint: string): Positioned => ({
    uid,
    updatedAt,
    fingerprint,
  });

  it('remembers the fingerprint of each boundary uid', () => {
    const outcome = applyPage(
      EMPTY_OFFSET,
      [fp('a', t(1), 'A1'), fp('b', t(2), 'B1'), fp('c', t(2), 'C1')],
      null,
      100,
    );
    expect(outcome.offset).toEqual({
      since: t(2),
      cursor: null,
      watermark: t(2),
      boundary: ['b', 'c'],
      boundaryFingerprints: { b: 'B1', c: 'C1' },
    });
  });

  it('skips a boundary record listed again with the same fingerprint', () => {
    const start = applyPage(EMPTY_OFFSET, [fp('a', t(5), 'A1')], null, 100).offset;
    const again = applyPage(start, [fp('a', t(5), 'A1')], null, 100);
    expect(again.duplicates.map((e) => e.uid)).toEqual(['a']);
    expect(again.accepted).toEqual([]);
    expect(again.offset).toEqual(start);
  });

  it('publishes again a call changed a second time within the same updatedAt, and remembers the new version', () => {
    const start = applyPage(EMPTY_OFFSET, [fp('a', t(5), 'A1'), fp('b', t(5), 'B1')], null, 100).offset;
    const changed = applyPage(start, [fp('b', t(5), 'B1'), fp('a', t(5), 'A2')], null, 100);
    expect(changed.accepted.map((e) => e.uid)).toEqual(['a']);
    expect(changed.duplicates.map((e) => e.uid)).toEqual(['b']);
    expect(changed.offset.boundary).toEqual(['a', 'b']);
    expect(changed.offset.boundaryFingerprints).toEqual({ a: 'A2', b: 'B1' });
    // The third listing of that version is a duplicate again.
    expect(applyPage(changed.offset, [fp('a', t(5), 'A2')], null, 100).accepted).toEqual([]);
  });

  it('publishes once more a boundary uid stored without a fingerprint (format version 1), never skipping it', () => {
    const legacy: LocationOffset = { since: t(5), cursor: null, watermark: t(5), boundary: ['a', 'b'] };
    const outcome = applyPage(legacy, [fp('a', t(5), 'A1'), fp('b', t(5), 'B1')], null, 100);
    expect(outcome.accepted.map((e) => e.uid)).toEqual(['a', 'b']);
    expect(outcome.offset.boundaryFingerprints).toEqual({ a: 'A1', b: 'B1' });
    expect(applyPage(outcome.offset, [fp('a', t(5), 'A1')], null, 100).accepted).toEqual([]);
  });

  it('forgets the fingerprints of the old instant when the watermark moves', () => {
    const start = applyPage(EMPTY_OFFSET, [fp('a', t(5), 'A1')], null, 100).offset;
    const moved = applyPage(start, [fp('b', t(6), 'B1')], null, 100);
    expect(moved.offset.boundaryFingerprints).toEqual({ b: 'B1' });
  });

  it('keeps the fingerprints through a restart after an invalid cursor', () => {
    const start = applyPage(EMPTY_OFFSET, [fp('a', t(5), 'A1')], 'more', 100).offset;
    expect(restartAfterInvalidCursor(start).boundaryFingerprints).toEqual({ a: 'A1' });
  });
});

describe('restartAfterInvalidCursor', () => {
  it('restarts from since = watermark, keeping the boundary', () => {
    expect(restartAfterInvalidCursor({ since: t(0), cursor: 'x', watermark: t(4), boundary: ['a'] })).toEqual(
      { since: t(4), cursor: null, watermark: t(4), boundary: ['a'] },
    );
  });

  it('restarts from the old since when nothing was published yet', () => {
    expect(
      restartAfterInvalidCursor({ since: t(0), cursor: 'x', watermark: null, boundary: [] }),
    ).toMatchObject({ since: t(0), cursor: null });
  });
});

describe('sameOffset', () => {
  it('compares offsets by value', () => {
    const a = { since: t(0), cursor: 'x', watermark: t(4), boundary: ['a'] };
    expect(sameOffset(a, { ...a, boundary: ['a'] })).toBe(true);
    expect(sameOffset(a, { ...a, boundaryOverflow: true })).toBe(false);
    expect(sameOffset(a, { ...a, cursor: 'y' })).toBe(false);
  });

  it('tells offsets apart by their boundary fingerprints', () => {
    const a = {
      since: t(0),
      cursor: 'x',
      watermark: t(4),
      boundary: ['a'],
      boundaryFingerprints: { a: 'A1' },
    };
    expect(sameOffset(a, { ...a, boundaryFingerprints: { a: 'A1' } })).toBe(true);
    expect(sameOffset(a, { ...a, boundaryFingerprints: { a: 'A2' } })).toBe(false);
    expect(sameOffset(a, { since: t(0), cursor: 'x', watermark: t(4), boundary: ['a'] })).toBe(false);
  });
});

describe('traversals over a model of the listing', () => {
  // 11 records; a group of 7 sharing one instant, larger than the page size (3).
  const data = [
    rec('r1', t(1)),
    ...Array.from({ length: 7 }, (_, i) => rec(`g${i}`, t(2))),
    rec('r2', t(3)),
    rec('r3', t(3, '.000001')),
    rec('r4', t(4)),
  ];

  it('publishes every record exactly once in a full backfill', () => {
    const run = traverse(listing(data), EMPTY_OFFSET);
    expect(run.published.map((r) => r.uid)).toEqual(data.map((r) => r.uid));
    expect(run.offset).toEqual({ since: t(4), cursor: null, watermark: t(4), boundary: ['r4'] });
  });

  it('publishes nothing again on the next traversal, and only the new record after an update', () => {
    const first = traverse(listing(data), EMPTY_OFFSET);
    const second = traverse(listing(data), first.offset);
    expect(second.published).toEqual([]);
    expect(second.duplicates.map((r) => r.uid)).toEqual(['r4']);
    const third = traverse(listing([...data, rec('new-at-boundary', t(4)), rec('r1', t(6))]), second.offset);
    expect(third.published.map((r) => r.uid)).toEqual(['new-at-boundary', 'r1']);
  });

  it('loses and doubles nothing when a traversal ends inside a same-instant group larger than a page', () => {
    // The data stop halfway through the group: the first traversal ends on it.
    const partial = data.slice(0, 5);
    const first = traverse(listing(partial), EMPTY_OFFSET);
    expect(first.offset).toMatchObject({ since: t(2), watermark: t(2), boundary: ['g0', 'g1', 'g2', 'g3'] });
    const second = traverse(listing(data), first.offset);
    expect([...first.published, ...second.published].map((r) => r.uid)).toEqual(data.map((r) => r.uid));
  });

  it('resumes an interrupted traversal from the stored cursor, at every page', () => {
    for (let stop = 1; stop <= 4; stop++) {
      const part = traverse(listing(data), EMPTY_OFFSET, { stopAfterPages: stop });
      const rest = traverse(listing(data), part.offset);
      expect(
        [...part.published, ...rest.published].map((r) => r.uid),
        `stopped after ${stop}`,
      ).toEqual(data.map((r) => r.uid));
    }
  });

  it('loses and doubles nothing when the cursor expires at any page and the traversal restarts from the watermark', () => {
    for (let stop = 1; stop <= 4; stop++) {
      const part = traverse(listing(data), EMPTY_OFFSET, { stopAfterPages: stop });
      const rest = traverse(listing(data), restartAfterInvalidCursor(part.offset));
      expect(
        [...part.published, ...rest.published].map((r) => r.uid),
        `expired after ${stop}`,
      ).toEqual(data.map((r) => r.uid));
    }
  });

  it('follows short and empty pages while a cursor is set', () => {
    const omitted = new Set(['g0', 'g1', 'g2', 'g3', 'g4', 'g5']);
    const run = traverse(listing(data, { omit: omitted }), EMPTY_OFFSET);
    expect(run.published.map((r) => r.uid)).toEqual(
      data.filter((r) => !omitted.has(r.uid)).map((r) => r.uid),
    );
    expect(run.pages).toBe(4);
  });

  it('doubles at most the overflowed records, and loses none, when the boundary cap is exceeded', () => {
    const first = traverse(listing(data.slice(0, 8)), EMPTY_OFFSET, { cap: 3 });
    expect(first.offset.boundaryOverflow).toBe(true);
    const second = traverse(listing(data), first.offset, { cap: 3 });
    const all = [...first.published, ...second.published].map((r) => r.uid);
    expect(new Set(all)).toEqual(new Set(data.map((r) => r.uid)));
    expect(second.published.map((r) => r.uid)).toEqual(['g3', 'g4', 'g5', 'g6', 'r2', 'r3', 'r4']);
  });
});
