import { describe, expect, it } from 'vitest';
import { listThroughGroup, type ListPage } from '../../../src/sync/group-read.js';
import type { MappedItem } from '../../../src/sync/model.js';
import type { ListedPage, PageRequest } from '../../../src/sync/ports.js';
import { listedCall } from '../../support/sync/prepared-page.js';

const LOC = '11111111-1111-1111-1111-111111111111';
const W = '2026-11-24T10:05:00Z';
const item = (uid: string, updatedAt: string): MappedItem => ({
  ok: true,
  call: listedCall(uid, updatedAt, LOC),
});
const first: PageRequest = { kind: 'first', locationUid: LOC, since: W, order: 'asc', limit: 2 };

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
    expect((await listThroughGroup(past.list, first, W)).nextCursor).toBe('c1');
    expect(past.requests).toHaveLength(1);
    const end = scripted([{ items: [item('a', W)], nextCursor: null }]);
    expect(await listThroughGroup(end.list, first, W)).toEqual({ items: [item('a', W)], nextCursor: null });
  });

  it('reads on with each cursor at once while the pages list nothing past the watermark, and hands on the last cursor', async () => {
    const { list, requests } = scripted([
      { items: [item('a', W), item('b', W)], nextCursor: 'c1' },
      { items: [], nextCursor: 'c2' },
      { items: [item('c', W), item('d', '2026-11-24T10:07:00Z')], nextCursor: 'c3' },
    ]);
    const listed = await listThroughGroup(list, first, W);
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
    expect((await listThroughGroup(list, first, W)).nextCursor).toBe('c1');
    expect(requests).toHaveLength(2);
  });
});
