import { describe, expect, it } from 'vitest';
import { EMPTY_OFFSET, type LocationOffset } from '../../../../src/sync/model.js';
import {
  isIdlePage,
  offsetKept,
  pageCommit,
  type PageOrigin,
} from '../../../../src/sync/location/page-commit.js';
import type { AssembledPage } from '../../../../src/sync/location/page-pipeline.js';
import { sampleCall } from '../../../support/calls.js';

const LOC = '11111111-1111-1111-1111-111111111111';
const AT = '2026-11-24T10:00:00Z';
const stored: LocationOffset = { since: AT, cursor: null, watermark: AT, boundary: ['a'] };
const nothing: AssembledPage = {
  calls: [],
  deadLetters: [],
  tombstones: [],
  redacted: 0,
  unenriched: new Map(),
  unenrichedExamples: [],
};
const origin: PageOrigin = {
  traversalId: 't1',
  page: 2,
  request: { kind: 'next', locationUid: LOC, cursor: 'c2', limit: 10 },
  from: stored,
};

describe('pageCommit', () => {
  it("carries the page's records, the offset after it, the offset known stored and where it was listed", () => {
    const commit = pageCommit(LOC, origin, { ...nothing, tombstones: ['g'] }, EMPTY_OFFSET, stored);
    expect(commit).toEqual({
      locationUid: LOC,
      calls: [],
      deadLetters: [],
      offset: EMPTY_OFFSET,
      committed: stored,
      tombstones: ['g'],
      source: { traversalId: 't1', page: 2, since: AT, cursor: 'c2' },
    });
  });

  it('names no cursor for the first page of a traversal, and no tombstones when there are none', () => {
    const first: PageOrigin = {
      ...origin,
      request: { kind: 'first', locationUid: LOC, since: AT, order: 'asc', limit: 10 },
    };
    const commit = pageCommit(LOC, first, nothing, stored, stored);
    expect(commit.source?.cursor).toBeNull();
    expect(commit).not.toHaveProperty('tombstones');
  });
});

describe('isIdlePage', () => {
  it('needs no commit for a page that publishes nothing and leaves the stored offset as it is', () => {
    const commit = pageCommit(LOC, origin, nothing, { ...stored, boundary: ['a'] }, stored);
    expect(isIdlePage(commit, stored, stored)).toBe(true);
  });

  it('commits a page with anything to publish', () => {
    const call = sampleCall({ uid: 'b', locationUid: LOC, updatedAt: AT });
    const commit = pageCommit(LOC, origin, { ...nothing, calls: [call] }, stored, stored);
    expect(isIdlePage(commit, stored, stored)).toBe(false);
  });

  it('needs no commit for the pages of a traversal that move nothing but a cursor the store does not hold', () => {
    const onward = { ...stored, cursor: 'c3' };
    expect(isIdlePage(pageCommit(LOC, origin, nothing, onward, stored), stored, stored)).toBe(true);
    expect(
      isIdlePage(pageCommit(LOC, origin, nothing, { ...stored, cursor: 'c4' }, stored), onward, stored),
    ).toBe(true);
    expect(isIdlePage(pageCommit(LOC, origin, nothing, stored, stored), onward, stored)).toBe(true);
  });

  it('commits a page that moves the offset, or follows a position moved away from a stored cursor', () => {
    const later = { ...stored, watermark: '2026-11-24T10:00:01Z' };
    expect(isIdlePage(pageCommit(LOC, origin, nothing, later, stored), stored, stored)).toBe(false);
    expect(
      isIdlePage(
        pageCommit(LOC, origin, nothing, { ...stored, boundary: ['a', 'b'] }, stored),
        stored,
        stored,
      ),
    ).toBe(false);
    // A stored cursor the listing rejected: the position restarts without it, and the store must forget it.
    const storedCursor = { ...stored, cursor: 'stale' };
    expect(isIdlePage(pageCommit(LOC, origin, nothing, stored, storedCursor), stored, storedCursor)).toBe(
      false,
    );
    // A history lane moving its own cursor is committed as before.
    const split = { ...stored, history: { since: AT, cursor: null, watermark: AT, boundary: [], until: AT } };
    const historyOnward = { ...split, history: { ...split.history, cursor: 'h2' } };
    expect(isIdlePage(pageCommit(LOC, origin, nothing, historyOnward, split), split, split)).toBe(false);
  });
});

describe('offsetKept', () => {
  it('keeps the stored object for an idle page whose offset equals it, and the new one otherwise', () => {
    const equal: LocationOffset = { ...stored, boundary: ['a'] };
    expect(offsetKept('idle', equal, stored)).toBe(stored);
    const moved: LocationOffset = { ...stored, cursor: 'c3' };
    expect(offsetKept('idle', moved, stored)).toBe(moved);
    expect(offsetKept('stored', equal, stored)).toBe(equal);
  });
});
