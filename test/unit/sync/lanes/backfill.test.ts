import { describe, expect, it } from 'vitest';
import {
  backfillFiguresAfter,
  backfillProgress,
  historyPositionMs,
  startsBackfill,
} from '../../../../src/sync/lanes/backfill.js';

describe('backfillProgress', () => {
  const figures = {
    untilMs: 10_000_000,
    positionMs: 4_000_000,
    startedAtMs: 1_000,
    startPositionMs: 1_000_000,
    records: 42,
  };

  it('is the API time left before T0, the rate it was read at so far, and the ETA at that rate', () => {
    // 3,000 s of API time read in 100 s of wall time: 30 s/s; 6,000 s left: 200 s.
    expect(backfillProgress(figures, 101_000)).toEqual({
      remainingSeconds: 6_000,
      rate: 30,
      etaSeconds: 200,
    });
  });

  it('has no rate nor ETA before any progress, and nothing while the position is unknown', () => {
    expect(backfillProgress({ ...figures, startPositionMs: 4_000_000 }, 101_000)).toEqual({
      remainingSeconds: 6_000,
      rate: null,
      etaSeconds: null,
    });
    expect(backfillProgress({ ...figures, startPositionMs: null }, 101_000).rate).toBeNull();
    expect(backfillProgress({ ...figures, positionMs: null }, 101_000)).toEqual({
      remainingSeconds: null,
      rate: null,
      etaSeconds: null,
    });
  });

  it('reads a lane position from its watermark, else its since', () => {
    const lane = { since: '1970-01-01T00:00:01Z', cursor: null, watermark: null, boundary: [] };
    expect(historyPositionMs(lane)).toBe(1000);
    expect(historyPositionMs({ ...lane, watermark: '1970-01-01T00:00:02.5Z' })).toBe(2500);
    expect(historyPositionMs({ ...lane, since: null })).toBeNull();
  });
});

describe('backfillFiguresAfter', () => {
  const until = '1970-01-01T01:00:00Z';
  const history = { since: '1970-01-01T00:00:10Z', cursor: null, watermark: null, boundary: [], until };

  it('starts the figures of a new history lane where it stands, its clock at now', () => {
    const figures = backfillFiguresAfter(null, history, 0, 5_000);
    expect(figures).toEqual({
      untilMs: 3_600_000,
      positionMs: 10_000,
      startedAtMs: 5_000,
      startPositionMs: 10_000,
      records: 0,
    });
    expect(startsBackfill(null, figures!)).toBe(true);
  });

  it('moves them on with the lane: its position and the records it published', () => {
    const known = backfillFiguresAfter(null, history, 0, 5_000);
    const moved = backfillFiguresAfter(known, { ...history, watermark: '1970-01-01T00:00:40Z' }, 3, 9_000);
    expect(moved).toEqual({ ...known, positionMs: 40_000, records: 3 });
    expect(startsBackfill(known, moved!)).toBe(false);
  });

  it('starts again for another T0, and ends when the lanes merged', () => {
    const known = backfillFiguresAfter(null, history, 7, 5_000);
    const again = backfillFiguresAfter(known, { ...history, until: '1970-01-01T02:00:00Z' }, 0, 9_000);
    expect(again).toMatchObject({ untilMs: 7_200_000, startedAtMs: 9_000, records: 0 });
    expect(startsBackfill(known, again!)).toBe(true);
    expect(backfillFiguresAfter(known, undefined, 0, 9_000)).toBeNull();
  });
});
