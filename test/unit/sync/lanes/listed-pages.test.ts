import { describe, expect, it } from 'vitest';
import { ListedPages } from '../../../../src/sync/lanes/listed-pages.js';
import type { ListedPage, PageRequest } from '../../../../src/sync/ports.js';

const LOC = 'loc';
const next = (cursor: string): PageRequest => ({ kind: 'next', locationUid: LOC, cursor, limit: 3 });
const page = (nextCursor: string | null): ListedPage => ({ items: [], nextCursor });

describe('ListedPages', () => {
  it('hands the pages held to the requests they were listed with, in order', () => {
    const held = new ListedPages();
    const [p2, p3] = [page('c3'), page(null)];
    held.hold([
      { request: next('c2'), listed: p2 },
      { request: next('c3'), listed: p3 },
    ]);
    expect(held.take(next('c2'))).toBe(p2);
    expect(held.take(next('c3'))).toBe(p3);
    expect(held.take(next('c4'))).toBeNull();
  });

  it('forgets every page held when a request is not the next one listed (a restart, an adopted offset)', () => {
    const held = new ListedPages();
    held.hold([
      { request: next('c2'), listed: page('c3') },
      { request: next('c3'), listed: page(null) },
    ]);
    expect(held.take({ kind: 'first', locationUid: LOC, since: null, order: 'asc', limit: 3 })).toBeNull();
    expect(held.size).toBe(0);
    expect(held.take(next('c3'))).toBeNull();
  });
});
