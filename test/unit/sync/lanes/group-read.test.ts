import { describe, expect, it } from 'vitest';
import { listGroupPages, listThroughGroup, type ListPage } from '../../../../src/sync/lanes/group-read.js';
import type { LaneOffset, MappedItem } from '../../../../src/sync/model.js';
import type { ListedPage, PageRequest } from '../../../../src/sync/ports.js';
import { listedCall } from '../../../support/sync/prepared-page.js';

const LOC = '11111111-1111-1111-1111-111111111111';
const W = '2026-11-24T10:05:00Z';
const item = (uid: string, updatedAt: string): MappedItem => ({
  ok: true,
  call: listedCall(uid, updatedAt, LOC),
});
const first: PageRequest = { kind: 'first', locationUid: LOC, since: W, order: 'asc', limit: 2 };
/** The lane's offset at W, its boundary holding `boundary`. */
const at = (boundary: string[] = [], overflow = false): LaneOffset => ({
  since: W,
  cursor: null,
  watermark: W,
  boundary,
  ...(overflow && { boundaryOverflow: true }),
});
const uids = (listed: ListedPage) => listed.items.map((i) => (i.ok ? i.call.uid : null));

/** A listing answering the scripted pages in order, recording each request. */
function scripted(pages: ListedPage[]): { list: ListPage; requests: PageRequest[] } {
  const requests: PageRequest[] = [];
  const list: ListPage = (request) => {
    requests.push(request);
    const page = pages.shift();
    if (page === undefined) throw new Error('no page scripted');
    return Promise.resolve(page);
  };
  return { list, requests };
}

describe('listThroughGroup', () => {
  it('is the one page asked for when it lists past the watermark, or ends the listing', async () => {
    const past = scripted([{ items: [item('a', W), item('b', '2026-11-24T10:06:00Z')], nextCursor: 'c1' }]);
    expect((await listThroughGroup(past.list, first, at(), null)).nextCursor).toBe('c1');
    expect(past.requests).toHaveLength(1);
    const end = scripted([{ items: [item('a', W)], nextCursor: null }]);
    expect(await listThroughGroup(end.list, first, at(), null)).toEqual({
      items: [item('a', W)],
      nextCursor: null,
    });
  });

  it('reads on with each cursor at once while the pages list nothing past the watermark, and hands on the last cursor', async () => {
    const { list, requests } = scripted([
      { items: [item('a', W), item('b', W)], nextCursor: 'c1' },
      { items: [], nextCursor: 'c2' },
      { items: [item('c', W), item('d', '2026-11-24T10:07:00Z')], nextCursor: 'c3' },
    ]);
    const listed = await listThroughGroup(list, first, at(), null);
    expect(listed.items.map((i) => (i.ok ? i.call.uid : null))).toEqual(['a', 'b', 'c', 'd']);
    expect(listed.nextCursor).toBe('c3');
    expect(requests.slice(1)).toEqual([
      { kind: 'next', locationUid: LOC, cursor: 'c1', limit: 2 },
      { kind: 'next', locationUid: LOC, cursor: 'c2', limit: 2 },
    ]);
  });

  it('stops at a cursor handed back twice, which the traversal then judges', async () => {
    const { list, requests } = scripted([
      { items: [item('a', W)], nextCursor: 'c1' },
      { items: [item('a', W)], nextCursor: 'c1' },
    ]);
    expect((await listThroughGroup(list, first, at(), null)).nextCursor).toBe('c1');
    expect(requests).toHaveLength(2);
  });

  describe('in pieces', () => {
    /** A group at W of `n` calls g0..g(n-1), listed two at a time, then one call after W. */
    function group(n: number) {
      const pages: ListedPage[] = [];
      for (let i = 0; i < n; i += 2)
        pages.push({
          items: [item(`g${i}`, W), ...(i + 1 < n ? [item(`g${i + 1}`, W)] : [])],
          nextCursor: `c${i + 2}`,
        });
      pages.push({ items: [item('after', '2026-11-24T10:06:00Z')], nextCursor: 'end' });
      return scripted(pages);
    }

    it('ends a page inside the group once it holds a piece of calls new to the boundary, with the cursor to go on', async () => {
      const { list, requests } = group(20);
      const listed = await listThroughGroup(list, first, at(), { calls: 5, bounds: { boundaryCap: 100 } });
      expect(uids(listed)).toEqual(['g0', 'g1', 'g2', 'g3', 'g4', 'g5']);
      expect(listed.nextCursor).toBe('c6');
      expect(requests).toHaveLength(3);
    });

    it('does not count the boundary duplicates of a restart towards the piece', async () => {
      const { list } = group(20);
      const published = ['g0', 'g1', 'g2', 'g3', 'g4', 'g5'];
      const listed = await listThroughGroup(list, first, at(published), {
        calls: 4,
        bounds: { boundaryCap: 100 },
      });
      expect(uids(listed)).toEqual([...published, 'g6', 'g7', 'g8', 'g9']);
      expect(listed.nextCursor).toBe('c10');
    });

    it('reads on to the end of the group once the boundary could not hold it, or after a restart at an overflowed boundary', async () => {
      const capped = group(12);
      const listed = await listThroughGroup(capped.list, first, at(['x']), {
        calls: 2,
        bounds: { boundaryCap: 2 },
      });
      expect(uids(listed)).toHaveLength(13);
      expect(listed.nextCursor).toBe('end');
      const bytes = group(12);
      const byBytes = await listThroughGroup(bytes.list, first, at(), {
        calls: 4,
        bounds: { boundaryCap: 100, boundaryMaxBytes: 100 },
      });
      expect(uids(byBytes)).toHaveLength(13);
      const overflowed = group(12);
      const restarted = await listThroughGroup(overflowed.list, first, at(['g0'], true), {
        calls: 2,
        bounds: { boundaryCap: 100 },
      });
      expect(uids(restarted)).toHaveLength(13);
    });
  });
});

describe('listGroupPages', () => {
  const groupOf = (n: number): ListedPage[] => {
    const pages: ListedPage[] = [];
    for (let i = 0; i < n; i += 2)
      pages.push({ items: [item(`g${i}`, W), item(`g${i + 1}`, W)], nextCursor: `c${i + 2}` });
    pages.push({ items: [item('after', '2026-11-24T10:06:00Z')], nextCursor: null });
    return pages;
  };

  it('gives each page as listed, with the request that listed it, through the group and to the first page past it', async () => {
    const { list } = scripted(groupOf(4));
    const pages = await listGroupPages(list, first, at(), 100);
    expect(pages.map((p) => p.request)).toEqual([
      first,
      { kind: 'next', locationUid: LOC, cursor: 'c2', limit: 2 },
      { kind: 'next', locationUid: LOC, cursor: 'c4', limit: 2 },
    ]);
    expect(pages.map((p) => uids(p.listed))).toEqual([['g0', 'g1'], ['g2', 'g3'], ['after']]);
  });

  it('stops once the pages hold the given number of calls new to the boundary, its duplicates not counted', async () => {
    const { list, requests } = scripted(groupOf(20));
    const pages = await listGroupPages(list, first, at(['g0', 'g1', 'g2', 'g3']), 3);
    expect(pages.map((p) => uids(p.listed))).toEqual([
      ['g0', 'g1'],
      ['g2', 'g3'],
      ['g4', 'g5'],
      ['g6', 'g7'],
    ]);
    expect(pages.at(-1)?.listed.nextCursor).toBe('c8');
    expect(requests).toHaveLength(4);
  });

  it('is the one page asked for when it lists past the watermark', async () => {
    const { list, requests } = scripted([
      { items: [item('a', W), item('b', '2026-11-24T10:06:00Z')], nextCursor: 'c1' },
    ]);
    expect(await listGroupPages(list, first, at(), 100)).toHaveLength(1);
    expect(requests).toHaveLength(1);
  });
});
