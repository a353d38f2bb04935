import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../../../src/logging/logger.js';
import { LiveLane } from '../../../../src/sync/lanes/live-lane.js';
import { EMPTY_OFFSET, type LocationOffset } from '../../../../src/sync/model.js';
import { TraversalRun } from '../../../../src/sync/location/traversal-run.js';
import { clockReading } from '../../../support/clock.js';
import { listedCall, preparedPage } from '../../../support/sync/prepared-page.js';
import type { MappedItem } from '../../../../src/sync/model.js';
import type { ListedPage, PageRequest } from '../../../../src/sync/ports.js';

const listedItem = (uid: string, updatedAt: string): MappedItem => ({
  ok: true,
  call: listedCall(uid, updatedAt, 'loc'),
});
const NOW = Date.parse('2026-11-24T12:00:00Z');
const T0 = '2026-11-24T11:00:00Z';
const split: LocationOffset = {
  ...EMPTY_OFFSET,
  since: T0,
  history: { ...EMPTY_OFFSET, until: T0 },
};

function lane() {
  const notified: string[][] = [];
  const completed: boolean[] = [];
  const live = new LiveLane({
    listener: { liveCommitted: (calls) => notified.push(calls.map((c) => c.uid)) },
    groupPieceSize: 1_000,
    counters: { traversalCompleted: (_startedAt, _now, caughtUp) => completed.push(caughtUp ?? true) },
    logger: silentLogger(),
    clock: clockReading(() => NOW),
  });
  return { live, notified, completed };
}

describe('LiveLane', () => {
  it("asks for live priority for a split location's live lane, and for an unsplit one once caught up", () => {
    const { live } = lane();
    expect(live.hint(split, 0)).toEqual({ priority: 'live' });
    expect(live.hint(EMPTY_OFFSET, 0)).toEqual({ priority: 'backfill' });
    expect(live.hint(EMPTY_OFFSET, 1)).toEqual({ priority: 'live' });
  });

  it('publishes its pages whole and carries no live-window mark', () => {
    const { live } = lane();
    const page = preparedPage([{ uid: 'a', updatedAt: T0 }]);
    expect(live.keep(page)).toEqual({ kept: page, superseded: 0 });
    expect(live.aheadMark()).toBeUndefined();
  });

  it('tells the history lane what each committed page published', () => {
    const { live, notified } = lane();
    const prepared = preparedPage([{ uid: 'a', updatedAt: T0 }]);
    const call = { ...prepared.enriched[0]!.listed, enriched: false, customerPhoneNumberRedacted: true };
    live.committed({
      from: EMPTY_OFFSET,
      request: { kind: 'first', locationUid: 'loc', since: null, order: 'asc', limit: 10 },
      listed: { items: [], nextCursor: null },
      prepared,
      page: {
        calls: [call],
        deadLetters: [],
        tombstones: [],
        redacted: 1,
        unenriched: new Map(),
        unenrichedExamples: [],
      },
      superseded: 0,
    });
    expect(notified).toEqual([['a']]);
  });

  it('counts a completed traversal as caught up only when no history lane is left behind it', () => {
    const { live, completed } = lane();
    const traversal = new TraversalRun('loc', 'live', NOW - 10, silentLogger());
    live.traversalEnded(traversal, NOW, split);
    live.traversalEnded(traversal, NOW, EMPTY_OFFSET);
    expect(completed).toEqual([false, true]);
  });

  it('lists through a same-instant group at once and hands the pages after the first to its next pages, with no request', async () => {
    const { live } = lane();
    const W = '2026-11-24T11:00:00Z';
    const item = (uid: string) => listedItem(uid, W);
    const listing: ListedPage[] = [
      { items: [item('a'), item('b')], nextCursor: 'c1' },
      { items: [item('c'), item('d')], nextCursor: 'c2' },
      { items: [listedItem('e', '2026-11-24T11:00:01Z')], nextCursor: null },
    ];
    const requests: PageRequest[] = [];
    const list = (request: PageRequest) => {
      requests.push(request);
      return Promise.resolve(listing[requests.length - 1] ?? { items: [], nextCursor: null });
    };
    const from = { ...EMPTY_OFFSET, since: W, watermark: W, boundary: ['a', 'b'] };
    const first: PageRequest = { kind: 'first', locationUid: 'loc', since: W, order: 'asc', limit: 2 };
    const bounds = { boundaryCap: 100 };
    expect(await live.list(list, first, from, bounds)).toBe(listing[0]);
    expect(requests).toHaveLength(3);
    const second: PageRequest = { kind: 'next', locationUid: 'loc', cursor: 'c1', limit: 2 };
    expect(await live.list(list, second, from, bounds)).toBe(listing[1]);
    expect(await live.list(list, { ...second, cursor: 'c2' }, from, bounds)).toBe(listing[2]);
    expect(requests).toHaveLength(3);
  });

  it('holds nothing from a listing that was cancelled meanwhile', async () => {
    const { live } = lane();
    const W = '2026-11-24T11:00:00Z';
    const cancel = new AbortController();
    let sent = 0;
    const list = (request: PageRequest): Promise<ListedPage> => {
      sent += 1;
      if (request.kind === 'first') return Promise.resolve({ items: [listedItem('a', W)], nextCursor: 'c1' });
      cancel.abort(); // the page read ahead was dropped while its listing went on through the group
      return Promise.resolve({ items: [listedItem('b', W)], nextCursor: null });
    };
    const from = { ...EMPTY_OFFSET, since: W, watermark: W, boundary: [] };
    const first: PageRequest = { kind: 'first', locationUid: 'loc', since: W, order: 'asc', limit: 1 };
    await live.list(list, first, from, { boundaryCap: 100 }, cancel.signal);
    expect(sent).toBe(2);
    const before = sent;
    await live.list(list, { kind: 'next', locationUid: 'loc', cursor: 'c1', limit: 1 }, from, {
      boundaryCap: 100,
    });
    expect(sent).toBe(before + 1);
  });
});
