import { describe, expect, it } from 'vitest';
import {
  advanced,
  historyProgress,
  historyStarved,
  limitBelowLiveDemand,
  locationsByGrant,
  pausedReplacementFailures,
  revokedGrants,
  staleLocations,
  type OffsetView,
} from '../../../tools/chaos/fault-checks.js';

const view = (records: number, history: string | null = null): OffsetView => ({
  records,
  watermark: null,
  cursor: null,
  history,
});

describe("the chaos checks of issue 32's faults", () => {
  it('divides the locations between the two grants, the first half to default', () => {
    expect(locationsByGrant(['a', 'b', 'c'])).toEqual({ default: ['a', 'b'], second: ['c'] });
    expect(locationsByGrant(['a', 'b', 'c', 'd'])).toEqual({ default: ['a', 'b'], second: ['c', 'd'] });
  });

  it('counts a location as advanced only when it committed a record between the readings', () => {
    const before = new Map([['a', view(3)]]);
    expect(advanced(before, new Map([['a', view(4)]]), 'a')).toBe(true);
    expect(advanced(before, new Map([['a', view(3)]]), 'a')).toBe(false);
    expect(advanced(new Map(), new Map([['b', view(1)]]), 'b')).toBe(true);
  });

  it('calls stale a location changed in time for a poll that committed nothing, and only that one', () => {
    const before = new Map([
      ['fresh', view(1)],
      ['stale', view(1)],
      ['late', view(1)],
      ['quiet', view(1)],
    ]);
    const after = new Map([
      ['fresh', view(2)],
      ['stale', view(1)],
      ['late', view(1)],
      ['quiet', view(1)],
    ]);
    const changedAt = new Map([
      ['fresh', [1_000]],
      ['stale', [500, 2_000]],
      ['late', [9_500]], // within the lead of the end: no time for a poll
    ]);
    const window = { from: 0, until: 10_000, leadMs: 1_000 };
    expect(staleLocations(before, after, ['fresh', 'stale', 'late', 'quiet'], changedAt, window)).toEqual([
      'stale',
    ]);
  });

  it('follows the history lanes open at the first reading: moved or merged advanced, unchanged stuck', () => {
    const before = new Map([
      ['moved', view(1, '{"since":"1"}')],
      ['merged', view(1, '{"since":"1"}')],
      ['stuck', view(1, '{"since":"1"}')],
      ['live-only', view(1)],
    ]);
    const after = new Map([
      ['moved', view(2, '{"since":"2"}')],
      ['merged', view(2)],
      ['stuck', view(5, '{"since":"1"}')],
      ['live-only', view(2)],
    ]);
    expect(historyProgress(before, after)).toEqual({
      open: ['moved', 'merged', 'stuck'],
      advanced: ['moved', 'merged'],
      stuck: ['stuck'],
    });
  });

  it('calls history starved only when a lane open at the start neither moved nor had a request granted', () => {
    const progress = (stuck: string[]) => ({ open: ['a', ...stuck], advanced: ['a'], stuck });
    expect(historyStarved({ progress: progress(['b']), backfillStarts: 0, allStarts: 30 })).toBe(true);
    expect(historyStarved({ progress: progress(['b']), backfillStarts: 4, allStarts: 30 })).toBe(false);
    expect(historyStarved({ progress: progress([]), backfillStarts: 0, allStarts: 30 })).toBe(false);
  });

  it('sets the hidden limit at half of what the live polls alone need, at least one request per second', () => {
    expect(limitBelowLiveDemand(12, 2000)).toBe(3);
    expect(limitBelowLiveDemand(200, 2000)).toBe(50);
    expect(limitBelowLiveDemand(1, 2000)).toBe(1);
  });

  it('reads the grants an instance logged as revoked, from the details or the message', () => {
    const log = [
      '{"level":50,"code":"AUTH_GRANT_REVOKED","grant":"second","msg":"..."}',
      '{"level":50,"code":"AUTH_GRANT_REVOKED","msg":"refused to refresh the access token of grant \\"default\\" (the grant"}',
      '{"level":30,"msg":"grant \\"other\\" is fine"}',
      '{"level":50,"code":"AUTH_GRANT_REVOKED","grant":"second"}',
    ].join('\n');
    expect(revokedGrants(log)).toEqual(['second', 'default']);
    expect(revokedGrants('{"code":"AUTH_GRANT_REVOKED"}')).toEqual(['default']);
  });

  it('fails a single-mode SIGSTOP whose replacement made no progress, is not the writer, or commits nothing after', () => {
    const kept = { tookOverMs: 4_000, writer: true, writesAfterMs: 1_500 };
    expect(pausedReplacementFailures(kept)).toEqual([]);
    expect(pausedReplacementFailures({ ...kept, tookOverMs: null })).toEqual([
      'the replacement committed no page while the writer was paused',
    ]);
    expect(pausedReplacementFailures({ ...kept, writer: false })).toEqual([
      'the replacement is not the writer once the woken instance was stopped',
    ]);
    // The writer on /status alone is not enough: pages must be committed.
    expect(pausedReplacementFailures({ ...kept, writesAfterMs: null })).toEqual([
      'no page committed once the woken instance was stopped',
    ]);
  });
});
