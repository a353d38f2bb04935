import { describe, expect, it } from 'vitest';
import {
  boundedLane,
  hasLane,
  laneOffset,
  lanePipeline,
  laneTraversal,
  readAheadKey,
  restartLane,
  historyRange,
  laneBoundaryBounds,
  liveLane,
  needsSplitCheck,
  offsetAfterPage,
  resetHistory,
  SECOND_LANE_RESERVED_BYTES,
  splitInstant,
  splitBoundaryBounds,
  splitOffset,
  type LaneSettings,
} from '../../../../src/sync/lanes/lanes.js';
import { EMPTY_OFFSET, type LocationOffset } from '../../../../src/sync/model.js';
import { LIVE_SINCE_WINDOW_MS } from '../../../../src/sync/location/priority.js';
import { boundaryEntryBytes } from '../../../../src/sync/location/traversal.js';

const NOW = Date.parse('2026-11-24T10:00:00Z');
const ON: LaneSettings = { enabled: true, overlapMs: 60_000, splitBacklogMs: 3_600_000 };
const NEWEST = '2026-11-24T09:59:30.123456Z';
const T0 = '2026-11-24T09:58:30.123Z';

function stored(watermark: string, extra: Partial<LocationOffset> = {}): LocationOffset {
  return {
    since: watermark,
    cursor: null,
    watermark,
    boundary: ['b1'],
    boundaryFingerprints: { b1: 'f1' },
    ...extra,
  };
}

describe('needsSplitCheck', () => {
  it('checks a location with nothing stored', () => {
    expect(needsSplitCheck(EMPTY_OFFSET, ON, NOW)).toBe(true);
  });

  it('checks a location whose since is older than the live window', () => {
    const old = new Date(NOW - LIVE_SINCE_WINDOW_MS - 1).toISOString();
    expect(needsSplitCheck(stored(old), ON, NOW)).toBe(true);
  });

  it('skips a location caught up recently (its backlog cannot exceed the threshold)', () => {
    const recent = new Date(NOW - 60_000).toISOString();
    expect(needsSplitCheck(stored(recent), ON, NOW)).toBe(false);
  });

  it('uses the threshold itself when it is shorter than the live window', () => {
    const settings = { ...ON, splitBacklogMs: 30_000 };
    expect(needsSplitCheck(stored(new Date(NOW - 60_000).toISOString()), settings, NOW)).toBe(true);
    expect(needsSplitCheck(stored(new Date(NOW - 20_000).toISOString()), settings, NOW)).toBe(false);
  });

  it('never checks when lanes are off, the threshold is 0, or the location is split already', () => {
    expect(needsSplitCheck(EMPTY_OFFSET, { ...ON, enabled: false }, NOW)).toBe(false);
    expect(needsSplitCheck(EMPTY_OFFSET, { ...ON, splitBacklogMs: 0 }, NOW)).toBe(false);
    const split = splitOffset(EMPTY_OFFSET, NEWEST, ON, null);
    expect(split).not.toBeNull();
    expect(needsSplitCheck(split!, ON, NOW)).toBe(false);
  });
});

describe('splitInstant', () => {
  it('is the newest updatedAt less the overlap, at millisecond precision, never after it', () => {
    expect(splitInstant(NEWEST, 60_000)).toBe(T0);
    expect(splitInstant('2026-11-24T10:59:30.5+01:00', 0)).toBe('2026-11-24T09:59:30.500Z');
    expect(splitInstant('2026-11-24T09:59:30.0009Z', 0)).toBe('2026-11-24T09:59:30.000Z');
  });

  it('refuses a negative overlap', () => {
    expect(() => splitInstant(NEWEST, -1)).toThrow(RangeError);
  });
});

describe('splitOffset', () => {
  it('splits a location with nothing stored: history from startSince up to T0, live from T0', () => {
    expect(splitOffset(EMPTY_OFFSET, NEWEST, ON, '2026-01-01T00:00:00Z')).toEqual({
      since: T0,
      cursor: null,
      watermark: null,
      boundary: [],
      history: { since: null, cursor: null, watermark: null, boundary: [], until: T0 },
    });
  });

  it('does not split a location without calls', () => {
    expect(splitOffset(EMPTY_OFFSET, null, ON, null)).toBeNull();
  });

  it('does not split when startSince is at or after T0 (no history to read)', () => {
    expect(splitOffset(EMPTY_OFFSET, NEWEST, ON, T0)).toBeNull();
    expect(splitOffset(EMPTY_OFFSET, NEWEST, ON, '2026-11-24T09:59:00Z')).toBeNull();
  });

  it('splits a stored offset behind by more than the threshold: history continues from it, cursor and boundary kept', () => {
    const old = stored('2026-11-24T08:00:00Z', { cursor: 'c-7', since: '2026-11-24T07:00:00Z' });
    expect(splitOffset(old, NEWEST, ON, null)).toEqual({
      since: T0,
      cursor: null,
      watermark: null,
      boundary: [],
      history: { ...old, until: T0 },
    });
  });

  it('does not split a stored offset behind by the threshold or less', () => {
    expect(splitOffset(stored('2026-11-24T08:59:30.123456Z'), NEWEST, ON, null)).toBeNull();
    expect(splitOffset(stored('2026-11-24T08:59:30.122Z'), NEWEST, ON, null)).not.toBeNull();
  });

  it('does not split when lanes are off or the location is split already', () => {
    const old = stored('2026-01-01T00:00:00Z');
    expect(splitOffset(old, NEWEST, { ...ON, enabled: false }, null)).toBeNull();
    expect(splitOffset(old, NEWEST, { ...ON, splitBacklogMs: 0 }, null)).toBeNull();
    const split = splitOffset(old, NEWEST, ON, null)!;
    expect(splitOffset(split, NEWEST, ON, null)).toBeNull();
  });
});

describe('historyRange', () => {
  const e = (uid: string, updatedAt: string) => ({ uid, updatedAt });

  it('keeps the entries before T0 and says the page reached T0 at the first entry at or after it', () => {
    const entries = [e('a', '2026-11-24T09:00:00Z'), e('b', T0), e('c', '2026-11-24T09:59:00Z')];
    expect(historyRange(entries, T0)).toEqual({ below: [entries[0]], reached: true, leftToLive: 2 });
  });

  it('compares instants exactly, whatever their spelling', () => {
    const entries = [e('a', '2026-11-24T10:58:30.122999+01:00'), e('b', '2026-11-24T10:58:30.123+01:00')];
    expect(historyRange(entries, T0)).toEqual({ below: [entries[0]], reached: true, leftToLive: 1 });
  });

  it('has not reached T0 while every entry is before it', () => {
    const entries = [e('a', '2026-11-24T09:00:00Z')];
    expect(historyRange(entries, T0)).toEqual({ below: entries, reached: false, leftToLive: 0 });
    expect(historyRange([], T0)).toEqual({ below: [], reached: false, leftToLive: 0 });
  });
});

describe('offsetAfterPage', () => {
  const split = splitOffset(stored('2026-11-24T08:00:00Z'), NEWEST, ON, null)!;
  const livePos = { since: T0, cursor: 'l-2', watermark: NEWEST, boundary: ['x'] };
  const historyPos = {
    since: '2026-11-24T08:00:00Z',
    cursor: 'h-3',
    watermark: '2026-11-24T08:30:00Z',
    boundary: ['y'],
  };

  it('moves the live lane and keeps the history lane as committed (the same object)', () => {
    const next = offsetAfterPage(split, 'live', livePos, false);
    expect(next).toEqual({ ...livePos, history: split.history });
    expect(next.history).toBe(split.history);
  });

  it('moves the history lane and keeps the live lane and T0 as committed', () => {
    expect(offsetAfterPage(split, 'history', historyPos, false)).toEqual({
      since: T0,
      cursor: null,
      watermark: null,
      boundary: [],
      history: { ...historyPos, until: T0 },
    });
  });

  it('merges the lanes when the history lane completes: the history part goes in that same offset', () => {
    const moved = offsetAfterPage(split, 'live', livePos, true);
    expect(offsetAfterPage(moved, 'history', historyPos, true)).toEqual(livePos);
  });

  it('leaves a location that is not split one lane', () => {
    expect(offsetAfterPage(EMPTY_OFFSET, 'live', livePos, true)).toEqual(livePos);
    expect(() => offsetAfterPage(EMPTY_OFFSET, 'history', historyPos, true)).toThrow();
  });
});

describe('resetHistory', () => {
  const split = splitOffset(stored('2026-11-24T08:00:00Z', { cursor: 'h-1' }), NEWEST, ON, null)!;

  it('starts the history lane over from the start, live lane and T0 unchanged', () => {
    expect(resetHistory(split, null)).toEqual({
      ...liveLane(split),
      history: { since: null, cursor: null, watermark: null, boundary: [], until: T0 },
    });
  });

  it('starts it from a time before T0', () => {
    expect(resetHistory(split, '2026-11-24T09:00:00Z')?.history).toEqual({
      since: '2026-11-24T09:00:00Z',
      cursor: null,
      watermark: null,
      boundary: [],
      until: T0,
    });
  });

  it('removes it for a time at or after T0 (nothing left to read)', () => {
    expect(resetHistory(split, T0)).toEqual(liveLane(split));
  });

  it('has nothing to reset on a location that is not split', () => {
    expect(resetHistory(stored('2026-11-24T08:00:00Z'), null)).toBeNull();
  });
});

describe('laneBoundaryBounds', () => {
  it('gives a lane the cap and bytes the other lane leaves, so one record holds both', () => {
    const other = {
      since: null,
      cursor: null,
      watermark: null,
      boundary: ['a', 'b'],
      boundaryFingerprints: { a: 'f' },
    };
    expect(laneBoundaryBounds({ boundaryCap: 10, boundaryMaxBytes: 100_000 }, other)).toEqual({
      boundaryCap: 8,
      boundaryMaxBytes:
        100_000 -
        SECOND_LANE_RESERVED_BYTES -
        boundaryEntryBytes('a', 'f') -
        boundaryEntryBytes('b', undefined),
    });
  });

  it('keeps at least one uid and 1 KiB, and no byte bound where there was none', () => {
    const other = { since: null, cursor: null, watermark: null, boundary: ['a', 'b'] };
    expect(laneBoundaryBounds({ boundaryCap: 2, boundaryMaxBytes: 2_000 }, other)).toEqual({
      boundaryCap: 1,
      boundaryMaxBytes: 1024,
    });
    expect(laneBoundaryBounds({ boundaryCap: 5 }, other)).toEqual({ boundaryCap: 3 });
  });
});

describe('boundedLane', () => {
  const lane = {
    since: '2026-11-24T08:00:00Z',
    cursor: null,
    watermark: '2026-11-24T08:00:00Z',
    boundary: ['a', 'b', 'c'],
    boundaryFingerprints: { a: 'fa', b: 'fb', c: 'fc' },
  };

  it('returns a lane within its bounds as it is', () => {
    expect(boundedLane(lane, { boundaryCap: 3, boundaryMaxBytes: 10_000 })).toBe(lane);
  });

  it('cuts the boundary to the cap and the bytes, in order, and marks the overflow (those uids are published again, never lost)', () => {
    expect(boundedLane(lane, { boundaryCap: 2 })).toEqual({
      ...lane,
      boundary: ['a', 'b'],
      boundaryFingerprints: { a: 'fa', b: 'fb' },
      boundaryOverflow: true,
    });
    const oneEntry = boundaryEntryBytes('a', 'fa');
    expect(boundedLane(lane, { boundaryCap: 3, boundaryMaxBytes: oneEntry })).toEqual({
      ...lane,
      boundary: ['a'],
      boundaryFingerprints: { a: 'fa' },
      boundaryOverflow: true,
    });
  });
});

describe('splitOffset with boundary bounds', () => {
  it("cuts the boundary the history lane inherits so the record holding both lanes fits what one lane's may take", () => {
    const uids = Array.from({ length: 2_000 }, (_, i) => `uid-${String(i).padStart(30, '0')}`);
    const full = stored('2026-11-24T08:00:00Z', {
      boundary: uids,
      boundaryFingerprints: Object.fromEntries(uids.map((uid) => [uid, 'f'.repeat(16)])),
    });
    const bounds = { boundaryCap: 10_000, boundaryMaxBytes: 100_000 };
    const split = splitOffset(full, NEWEST, ON, null, bounds)!;
    const history = split.history!;
    const bytes = history.boundary.reduce(
      (sum, uid) => sum + boundaryEntryBytes(uid, history.boundaryFingerprints?.[uid]),
      0,
    );
    const allowed = splitBoundaryBounds(bounds).boundaryMaxBytes!;
    expect(allowed).toBe(100_000 - SECOND_LANE_RESERVED_BYTES - 1024);
    expect(bytes).toBeLessThanOrEqual(allowed);
    expect(history.boundary.length).toBeGreaterThan(0);
    expect(history.boundary.length).toBeLessThan(uids.length);
    expect(history.boundaryOverflow).toBe(true);
    // The live lane beside it is left 1 KiB at least without laneBoundaryBounds' floor: both boundaries and the
    // second lane's fields stay within what one lane's record may take.
    expect(100_000 - SECOND_LANE_RESERVED_BYTES - bytes).toBeGreaterThanOrEqual(1024);
  });

  it('keeps a boundary that fits whole', () => {
    const split = splitOffset(stored('2026-11-24T08:00:00Z'), NEWEST, ON, null, { boundaryCap: 10 })!;
    expect(split.history).toMatchObject({ boundary: ['b1'], boundaryFingerprints: { b1: 'f1' } });
    expect(split.history?.boundaryOverflow).toBeUndefined();
  });
});

describe('lane geometry', () => {
  const history = { ...stored('2026-11-24T08:00:00Z', { cursor: 'h-cursor' }), until: T0 };
  const split: LocationOffset = { ...stored(T0, { boundary: ['l1', 'l2'] }), history };

  it("gives each lane its position: the offset's own fields, or its history lane", () => {
    expect(laneOffset(split, 'live')).toBe(split);
    expect(laneOffset(split, 'history')).toBe(history);
    expect(hasLane(split, 'history')).toBe(true);
    expect(hasLane(EMPTY_OFFSET, 'history')).toBe(false);
    expect(hasLane(EMPTY_OFFSET, 'live')).toBe(true);
    expect(() => laneOffset(EMPTY_OFFSET, 'history')).toThrow('not split');
  });

  it("keys the live lane's read-ahead by the whole offset and the history lane's by its own object", () => {
    expect(readAheadKey(split, 'live')).toBe(split);
    expect(readAheadKey(split, 'history')).toBe(history);
    expect(readAheadKey({ ...split, since: 'moved' }, 'history')).toBe(history);
  });

  it("gives a split location's lanes the boundary bounds the other leaves, and the history lane T0", () => {
    const base = { boundaryCap: 10, privacy: 'redact-always' as const };
    expect(lanePipeline(base, split, 'live')).toEqual({ ...base, boundaryCap: 9 });
    expect(lanePipeline(base, split, 'history')).toEqual({ ...base, boundaryCap: 8, until: T0 });
  });

  it('keeps the pipeline of a location that is not split as it is', () => {
    const base = { boundaryCap: 10, boundaryMaxBytes: 100_000 };
    expect(lanePipeline(base, EMPTY_OFFSET, 'live')).toBe(base);
  });

  it("lists history pages of the lanes' history page size at most, live pages of the page size", () => {
    const base = { locationUid: 'loc', pageSize: 50, startSince: null, boundaryCap: 10 };
    expect(laneTraversal(base, 'live', 20)).toBe(base);
    expect(laneTraversal(base, 'history', 20)).toEqual({ ...base, pageSize: 20 });
    expect(laneTraversal(base, 'history', 100)).toEqual({ ...base, pageSize: 50 });
    expect(laneTraversal(base, 'history', undefined)).toBe(base);
  });

  it('restarts only the lane whose cursor was rejected, from its watermark, T0 kept', () => {
    const live = restartLane({ ...split, cursor: 'l-cursor' }, 'live');
    expect(live).toMatchObject({ since: T0, cursor: null, history });
    const restarted = restartLane(split, 'history');
    expect(restarted.history).toEqual({ ...history, cursor: null, since: history.watermark });
    expect(restarted.cursor).toBe(split.cursor);
  });
});
