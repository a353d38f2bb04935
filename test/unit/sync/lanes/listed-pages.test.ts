import { describe, expect, it } from 'vitest';
import { ListedPages } from '../../../../src/sync/lanes/listed-pages.js';
import type { ListedPage, PageRequest } from '../../../../src/sync/ports.js';

const LOC = 'loc';
const next = (cursor: string): PageRequest => ({ kind: 'next', locationUid: LOC, cursor, limit: 3 });
const first: PageRequest = { kind: 'first', locationUid: LOC, since: null, order: 'asc', limit: 3 };
const page = (nextCursor: string | null): ListedPage => ({ items: [], nextCursor });

function holding(): { held: ListedPages; p2: ListedPage; p3: ListedPage } {
  const held = new ListedPages();
  const [p2, p3] = [page('c3'), page('c4')];
  held.hold([
    { request: next('c2'), listed: p2 },
    { request: next('c3'), listed: p3 },
  ]);
  return { held, p2, p3 };
}

describe('ListedPages', () => {
  it('hands the pages held to the requests they were listed with, in order', () => {
    const { held, p2, p3 } = holding();
    expect(held.take(next('c2'))).toBe(p2);
    expect(held.take(next('c3'))).toBe(p3);
  });

  it('hands a page over again to a retry of its request, after the page after it was taken ahead', () => {
    const { held, p2, p3 } = holding();
    expect(held.take(next('c2'))).toBe(p2);
    expect(held.take(next('c3'))).toBe(p3); // read ahead while the page of c2 commits
    expect(held.take(next('c2'))).toBe(p2); // that commit failed: the page is asked for again
    expect(held.take(next('c3'))).toBe(p3);
  });

  it('forgets every page held once the lane lists past them', () => {
    const { held } = holding();
    held.take(next('c2'));
    held.take(next('c3'));
    expect(held.take(next('c4'))).toBeNull();
    expect(held.take(next('c2'))).toBeNull();
  });

  it('forgets every page held at a first page (a restart from the watermark) or a cursor it did not list', () => {
    for (const request of [first, next('elsewhere')]) {
      const { held } = holding();
      expect(held.take(request)).toBeNull();
      expect(held.take(next('c2'))).toBeNull();
    }
  });
});
