import { describe, expect, it } from 'vitest';
import {
  asPublished,
  compareVersion,
  findDuplicates,
  findLost,
  findOffsetViolations,
  findReReadGaps,
  findRegressions,
  findUnreadPartitions,
  judgeRecords,
  knownVersions,
  leaksNumber,
  type PartitionRead,
  type PublishedCall,
  type PublishedRecord,
  type StoredOffset,
  type TruthCall,
} from '../../../tools/chaos/judge.js';

const truth: TruthCall = {
  uid: 'c1',
  locationUid: 'l1',
  updatedAt: '2026-01-02T03:04:05.678Z',
  locationPhoneNumber: '+15550001111',
  customerPhoneNumber: '+15550002222',
  startedAt: '2026-01-02T03:00:00.000Z',
  endedAt: '2026-01-02T03:04:00.000Z',
  isPrivate: false,
  conversationUid: 'conv-1',
};

/** A record as the registry decodes it: times in microseconds. */
function decoded(overrides: Record<string, unknown> = {}): PublishedCall {
  return asPublished({
    uid: 'c1',
    locationUid: 'l1',
    updatedAt: Date.parse(truth.updatedAt) * 1000,
    updatedAtIso: truth.updatedAt,
    locationPhoneNumber: '+15550001111',
    customerPhoneNumber: '+15550002222',
    startedAt: Date.parse(truth.startedAt) * 1000,
    endedAt: Date.parse(truth.endedAt) * 1000,
    isPrivate: false,
    conversationUid: 'conv-1',
    enriched: true,
    customerPhoneNumberRedacted: false,
    ingestedAt: 1,
    ...overrides,
  });
}

describe('the chaos checker', () => {
  it('accepts a record equal to the truth of its version', () => {
    expect(compareVersion(decoded(), truth)).toEqual([]);
    expect(leaksNumber(decoded(), truth)).toBe(false);
  });

  it('names the fields of a record enriched from another version', () => {
    const mixed = decoded({ isPrivate: true, customerPhoneNumber: null, conversationUid: 'conv-2' });
    expect(compareVersion(mixed, truth)).toEqual(['isPrivate', 'conversationUid', 'customerPhoneNumber']);
  });

  it('flags a customer number published for a private version or without enrichment', () => {
    expect(leaksNumber(decoded(), { ...truth, isPrivate: true })).toBe(true);
    const unenriched = decoded({ enriched: false, startedAt: null, endedAt: null, isPrivate: null });
    expect(leaksNumber(unenriched, truth)).toBe(true);
    expect(leaksNumber({ ...unenriched, customerPhoneNumber: null }, truth)).toBe(false);
  });

  it('flags an unenriched record that carries enrichment values', () => {
    expect(compareVersion(decoded({ enriched: false, customerPhoneNumber: null }), truth)).toEqual([
      'unenriched with values',
    ]);
  });

  it('flags an unenriched record that carries only an endedAt or only a conversationUid, and passes one with none', () => {
    const bare = { enriched: false, customerPhoneNumber: null, startedAt: null, isPrivate: null };
    expect(compareVersion(decoded({ ...bare, conversationUid: null }), truth)).toEqual([
      'unenriched with values',
    ]);
    expect(compareVersion(decoded({ ...bare, endedAt: null }), truth)).toEqual(['unenriched with values']);
    expect(compareVersion(decoded({ ...bare, endedAt: null, conversationUid: null }), truth)).toEqual([]);
  });
});

const LOCATION = 'l1';
const ms = (iso: string): number => Date.parse(iso);

/** A version of call `uid` at `iso`, equal to its truth. */
function version(uid: string, iso: string): TruthCall {
  return { ...truth, uid, updatedAt: iso };
}

/** A committed record of `v` at (partition, offset), as the witness returns it. */
function record(
  v: TruthCall,
  partition: number,
  offset: number,
  overrides: Partial<PublishedCall> = {},
): PublishedRecord {
  return {
    partition,
    offset,
    key: v.uid,
    call: {
      ...decoded({ uid: v.uid, updatedAt: ms(v.updatedAt) * 1000, updatedAtIso: v.updatedAt }),
      ...overrides,
    },
  };
}

const T1 = '2026-01-02T03:04:05.000Z';
const T2 = '2026-01-02T03:04:06.000Z';
const T3 = '2026-01-02T03:04:07.000Z';

function readTo(partition: number, position: number, high: number, lastStable = high): PartitionRead {
  return { partition, low: 0, high, lastStable, position, records: position, reachedEnd: position >= high };
}

describe('the chaos judge', () => {
  it('counts a current version no committed record carries as lost, and nothing else', () => {
    const a = version('a', T2);
    const b = version('b', T1);
    const truthNow = new Map([[LOCATION, [a, b]]]);
    const lost = findLost(truthNow, [record(version('a', T1), 0, 0), record(b, 0, 1)]);
    expect(lost.count).toBe(1);
    expect(lost.samples).toEqual([`a@${ms(T2)} (location ${LOCATION})`]);
    expect(findLost(truthNow, [record(a, 1, 0), record(b, 0, 0)]).count).toBe(0);
  });

  it('counts each copy of a version beyond its first as duplicated, across partitions too', () => {
    const a = version('a', T1);
    const { duplicated, versions } = findDuplicates([
      record(a, 0, 0),
      record(version('a', T2), 0, 1),
      record(a, 0, 2),
      record(a, 1, 0),
    ]);
    expect(versions).toBe(2);
    expect(duplicated.count).toBe(2);
    expect(duplicated.samples[0]).toMatch(new RegExp(`^a@${ms(T1)} \\(encoded at `));
    expect(findDuplicates([record(a, 0, 0), record(version('a', T2), 0, 1)]).duplicated.count).toBe(0);
  });

  it('counts a backfill’s re-read apart from the change it re-reads, and a second re-read by one signal as duplicated', () => {
    const a = version('a', T1);
    const reRead = (offset: number, signal: string): PublishedRecord => ({
      ...record(a, 0, offset),
      reRead: signal,
    });
    expect(findDuplicates([record(a, 0, 0), reRead(1, 's1'), reRead(2, 's2')]).duplicated.count).toBe(0);
    const twice = findDuplicates([record(a, 0, 0), reRead(1, 's1'), reRead(2, 's1')]);
    expect(twice.duplicated.count).toBe(1);
    expect(twice.versions).toBe(1);
  });

  it('names each current version of a backfill range no record re-read by that signal carries', () => {
    const before = version('a', T1);
    const inRange = version('b', T2);
    const after = version('c', T3);
    const truthNow = new Map([[LOCATION, [before, inRange, after]]]);
    const backfill = { id: 's1', location: LOCATION, since: T2, until: T3 };
    const changes = [record(before, 0, 0), record(inRange, 0, 1), record(after, 0, 2)];
    const gaps = findReReadGaps(truthNow, changes, [backfill]);
    expect(gaps.missing.samples).toEqual([`b@${ms(T2)} (backfill s1)`]);
    expect(gaps.reReads).toBe(0);
    // Re-read by another signal: still missing for s1; by s1: none missing.
    const other = { ...record(inRange, 0, 3), reRead: 's2' };
    expect(findReReadGaps(truthNow, [...changes, other], [backfill]).missing.count).toBe(1);
    const done = { ...record(inRange, 0, 3), reRead: 's1' };
    expect(findReReadGaps(truthNow, [...changes, done], [backfill])).toMatchObject({
      missing: { count: 0 },
      reReads: 1,
    });
  });

  it('flags a uid whose version goes backwards in its partition’s offset order, whatever order it was read in', () => {
    const regressions = findRegressions([
      record(version('a', T3), 0, 7),
      record(version('a', T1), 0, 3),
      record(version('a', T2), 0, 9),
      record(version('b', T2), 0, 4),
    ]);
    expect(regressions.count).toBe(1);
    expect(regressions.samples).toEqual([`a: ${T2} at partition 0 offset 9, after ${T3} at offset 7`]);
  });

  it('does not count a repeated version or the same uid in another partition as going backwards', () => {
    const regressions = findRegressions([
      record(version('a', T2), 0, 0),
      record(version('a', T2), 0, 1),
      record(version('a', T1), 1, 5),
      record(version('a', T3), 0, 2),
    ]);
    expect(regressions.count).toBe(0);
  });

  it('names each partition the witness did not read to its end, with how far it got', () => {
    const unread = findUnreadPartitions([
      { topic: 'calls', partitions: [readTo(0, 10, 10), readTo(1, 4, 12, 8)] },
      { topic: 'offsets', partitions: [readTo(0, 0, 0), readTo(2, 3, 5)] },
    ]);
    expect(unread.count).toBe(2);
    expect(unread.samples).toEqual([
      'calls partition 1: read to 4 of 12 (last stable offset 8)',
      'offsets partition 2: read to 3 of 5 (last stable offset 5)',
    ]);
    expect(findUnreadPartitions([{ topic: 'calls', partitions: [readTo(0, 3, 3)] }]).count).toBe(0);
  });

  it('accepts stored offsets at the end of their locations and names each way one is not', () => {
    const truthNow = new Map([
      ['l1', [version('a', T1), version('b', T2)]],
      ['l2', [{ ...version('c', T2), locationUid: 'l2' }]],
      ['l3', [{ ...version('d', T1), locationUid: 'l3' }]],
      ['l4', [{ ...version('e', T1), locationUid: 'l4' }]],
      ['empty', []],
    ]);
    const atEnd = { cursor: null, watermark: T2 };
    expect(findOffsetViolations(truthNow, new Map([['n/l1', atEnd]]), [], 'n').samples).toEqual([
      'l2: no stored offset',
      'l3: no stored offset',
      'l4: no stored offset',
    ]);
    const offsets = new Map<string, StoredOffset | null>([
      ['n/l1', atEnd],
      ['n/l2', { cursor: 'c1', watermark: T2 }],
      ['n/l3', { cursor: null, watermark: T1, history: { until: T1 } }],
      ['n/l4', { cursor: null, watermark: T1 }],
    ]);
    const published = [record({ ...version('e', T3), locationUid: 'l4' }, 0, 0, { locationUid: 'l4' })];
    const violations = findOffsetViolations(truthNow, offsets, published, 'n');
    expect(violations.samples).toEqual([
      'l2: a cursor is still stored after the run settled',
      'l3: its history lane is still stored after the run settled',
      'l4: a record newer than the stored watermark was published',
    ]);
    expect(
      findOffsetViolations(truthNow, new Map([['n/l1', { cursor: null, watermark: T1 }]]), [], 'n')
        .samples[0],
    ).toBe(`l1: watermark ${T1} is not the newest updatedAt`);
  });

  it('judges each record against the version it claims: unlisted, never held, key differing, leaked, unequal', () => {
    const a = version('a', T1);
    const { known, listedUids } = knownVersions([a, version('b', T1)]);
    const judged = judgeRecords(
      [
        record(a, 0, 0),
        record(version('stranger', T1), 0, 1),
        record(version('b', T3), 0, 2),
        { ...record(a, 0, 3), key: 'other' },
        record(a, 0, 4, { isPrivate: true, customerPhoneNumber: null }),
        record(a, 0, 5, {
          enriched: false,
          startedAt: null,
          endedAt: null,
          isPrivate: null,
          conversationUid: null,
        }),
      ],
      known,
      listedUids,
    );
    expect(judged.unlisted.samples).toEqual([`stranger@${ms(T1)}`]);
    expect(judged.unknownVersion.samples).toEqual([`b@${ms(T3)}`, `a@${ms(T1)}: key differs`]);
    expect(judged.privacyLeaks.samples).toEqual([
      `a@${ms(T1)}: number published (private=false, enriched=false)`,
    ]);
    expect(judged.enrichmentMismatches.samples).toEqual([`a@${ms(T1)}: isPrivate, customerPhoneNumber`]);
    expect(judged.unenriched).toBe(1);
  });

  it('flags a customer number leaked for a version the sandbox held private', () => {
    const secret = { ...version('a', T1), isPrivate: true };
    const { known, listedUids } = knownVersions([secret]);
    const judged = judgeRecords([record(secret, 0, 0)], known, listedUids);
    expect(judged.privacyLeaks.count).toBe(1);
    expect(judged.privacyLeaks.samples[0]).toBe(
      `a@${ms(T1)}: number published (private=true, enriched=true)`,
    );
  });
});
