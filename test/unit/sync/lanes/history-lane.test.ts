import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../../../src/logging/logger.js';
import type { BackfillFigures } from '../../../../src/sync/lanes/backfill.js';
import { HistoryLane } from '../../../../src/sync/lanes/history-lane.js';
import { DEFAULT_LANE_SETTINGS } from '../../../../src/sync/lanes/lanes.js';
import { EMPTY_OFFSET, type LocationOffset } from '../../../../src/sync/model.js';
import type { ListedPage } from '../../../../src/sync/ports.js';
import { clockReading } from '../../../support/clock.js';
import { listedCall, preparedPage } from '../../../support/sync/prepared-page.js';

const LOC = '11111111-1111-1111-1111-111111111111';
const T0 = '2026-11-24T11:00:00.000Z';
const split: LocationOffset = {
  since: T0,
  cursor: null,
  watermark: null,
  boundary: [],
  history: { since: '2026-11-24T08:00:00Z', cursor: null, watermark: null, boundary: [], until: T0 },
};
const page = preparedPage([
  { uid: 'a', updatedAt: '2026-11-24T09:00:00Z' },
  { uid: 'b', updatedAt: '2026-11-24T09:00:00Z' },
]);
const newerA = [{ uid: 'a', updatedAt: '2026-11-24T11:30:00Z' }];

function lane(options: { now?: number; listing?: ListedPage } = {}) {
  const observed: (BackfillFigures | null)[] = [];
  const published: number[] = [];
  const history = new HistoryLane({
    locationUid: LOC,
    api: {
      listPage: () => Promise.resolve(options.listing ?? { items: [], nextCursor: null }),
    },
    lanes: DEFAULT_LANE_SETTINGS,
    startSince: null,
    bounds: { boundaryCap: 100 },
    clock: clockReading(() => options.now ?? 1_000),
    logger: silentLogger(),
    counters: { historyPublished: (records) => published.push(records) },
    metrics: { observeBackfill: (_uid, figures) => observed.push(figures) },
  });
  return { history, observed, published };
}

describe('HistoryLane', () => {
  it('drops from its page in turn a call the live lane published newer while the page was in flight', () => {
    const { history } = lane();
    history.pageBegins(null);
    history.liveCommitted(newerA);
    const { kept, superseded } = history.keep(page);
    expect(kept.enriched.map((item) => item.listed.uid)).toEqual(['b']);
    expect(superseded).toBe(1);
  });

  it('keeps what the live lane published before its page was listed, and remembers nothing with no page in flight', () => {
    const { history } = lane();
    history.liveCommitted(newerA); // no history page in flight: not remembered
    history.pageBegins(null);
    expect(history.keep(page).superseded).toBe(0);
  });

  it('forgets the live window once its page ended with none read ahead', () => {
    const { history } = lane();
    history.pageBegins(null);
    history.liveCommitted(newerA);
    history.pageEnded();
    history.pageBegins(null);
    expect(history.keep(page).superseded).toBe(0);
  });

  it('keeps a page whole outside its turn', () => {
    const { history } = lane();
    expect(history.keep(page)).toEqual({ kept: page, superseded: 0 });
  });

  it('asks for backfill priority and gives a page read ahead the live window mark of now', () => {
    const { history } = lane();
    expect(history.hint()).toEqual({ priority: 'backfill' });
    expect(history.aheadMark()).toBe(0);
  });

  it('starts the backfill figures at the split, moves them with its pages and ends them at the merge', () => {
    const { history, observed, published } = lane({ now: 5_000 });
    history.track(split, 0);
    expect(published).toEqual([0]);
    expect(history.backfill(5_000)).toMatchObject({
      untilMs: Date.parse(T0),
      startedAtMs: 5_000,
      records: 0,
    });
    const moved: LocationOffset = {
      ...split,
      history: { ...split.history!, watermark: '2026-11-24T09:00:00Z' },
    };
    history.track(moved, 2);
    expect(history.backfill(5_000)).toMatchObject({
      records: 2,
      positionMs: Date.parse('2026-11-24T09:00:00Z'),
    });
    history.track(EMPTY_OFFSET, 0);
    expect(history.backfill(5_000)).toBeNull();
    expect(observed.map((figures) => figures?.records ?? null)).toEqual([0, 2, null]);
    expect(published).toEqual([0]);
  });

  it('tells no metric anything for a location never split', () => {
    const { history, observed } = lane();
    history.track(EMPTY_OFFSET, 0);
    expect(observed).toEqual([]);
    expect(history.ahead(EMPTY_OFFSET)).toEqual({ state: 'none' });
  });

  it('splits a location at T0 on the split check and starts its figures', async () => {
    const listing: ListedPage = {
      items: [{ ok: true, call: listedCall('n', '2026-11-24T11:59:00Z', LOC) }],
      nextCursor: null,
    };
    const { history, observed } = lane({ now: Date.parse('2026-11-24T12:00:00Z'), listing });
    const offset = await history.split(EMPTY_OFFSET);
    // The only call changed within the overlap: T0 is its updatedAt, as the API wrote it.
    expect(offset?.history?.until).toBe('2026-11-24T11:59:00Z');
    expect(observed).toHaveLength(1);
    expect(await history.split(EMPTY_OFFSET)).toBeNull();
  });
});
