/**
 * A randomized check of the exactly-once contract of LocationSync over the in-memory sink: seeded runs of
 * crashes (a new LocationSync from the stored offset), expired cursors, failed and ambiguous commits,
 * failed offset read-backs, producer re-initialisations, new calls at or after the newest instant (groups sharing one instant across
 * pages), updates between traversals, and one instant spelled in several precisions and offsets.
 * After the faults stop, every current call version must have been published exactly once.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_POLICY } from '../../../../src/api/retry-policy.js';
import { silentLogger } from '../../../../src/logging/logger.js';
import { testMetrics } from '../../../support/metrics.js';
import { Enricher } from '../../../../src/sync/location/enricher.js';
import { compareDateTimes, parseInstant, toEpochMicros } from '../../../../src/time/instant.js';
import type { LaneSettings } from '../../../../src/sync/lanes/lanes.js';
import { LocationSync } from '../../../../src/sync/location/location-sync.js';
import { EMPTY_OFFSET, type LocationOffset } from '../../../../src/sync/model.js';
import { FakeCallsApi } from '../../../support/sync/fake-calls-api.js';
import { InMemorySink } from '../../../support/sync/in-memory-sink.js';
import { testFingerprints } from '../../../support/sync/fingerprints.js';
import { runTraversal } from '../../../support/sync/run-traversal.js';

const LOC = '22222222-2222-2222-2222-222222222222';
const SEEDS = 500;

/** A small seeded generator (LCG): the same seed replays the same run. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

/** The instant 12:00:00 + `millis` on one day, in one of several spellings of that same instant. */
function spell(random: () => number, millis: number): string {
  const minute = String(Math.floor(millis / 60_000)).padStart(2, '0');
  const second = String(Math.floor(millis / 1000) % 60).padStart(2, '0');
  const frac = String(millis % 1000).padStart(3, '0');
  const spellings = [
    `2024-03-01T12:${minute}:${second}.${frac}Z`,
    `2024-03-01T12:${minute}:${second}.${frac}000Z`,
    `2024-03-01T12:${minute}:${second}.${frac.replace(/0+$/, '') || '0'}Z`,
    `2024-03-01T13:${minute}:${second}.${frac}+01:00`,
    `2024-03-01T12:${minute}:${second}.${frac}+00:00`,
  ];
  return spellings[Math.floor(random() * spellings.length)] ?? spellings[0]!;
}

function versionKey(uid: string, updatedAt: string): string {
  const instant = parseInstant(updatedAt);
  if (instant === null) throw new RangeError(updatedAt);
  return `${uid}@${toEpochMicros(instant)}`;
}

/**
 * One seeded run. With `lanes`, the location is split (lanes.ts) whenever its stored position is far enough
 * behind, each step runs a page of a lane drawn at random, the listing pages by keyset (as a real API does)
 * and calls are also updated while traversals are open, so history pages read ahead meet versions the live
 * lane publishes first.
 */
async function run(
  seed: number,
  lanes = false,
  options: { boundaryCap?: number } = {},
): Promise<{ doubled: string[]; lost: string[]; regressed: string[]; final: string[] }> {
  const random = seeded(seed);
  const api = new FakeCallsApi();
  api.keysetCursors = lanes;
  const sink = new InMemorySink();
  const current = new Map<string, string>();
  let newest = 0;
  const put = (uid: string) => {
    // At the newest instant (a growing group) or a little later: listings never change behind a cursor.
    if (random() < 0.5) newest += Math.floor(random() * 3) * 100 + (random() < 0.3 ? 1000 : 0);
    const updatedAt = spell(random, newest);
    api.upsert({ uid, locationUid: LOC, updatedAt });
    current.set(uid, updatedAt);
  };
  let created = 0;
  for (let i = 0; i < 5 + Math.floor(random() * 30); i++) put(`c${created++}`);
  const pageSize = 1 + Math.floor(random() * 4);
  const maxAttempts = 1 + Math.floor(random() * 3);
  const laneSettings: LaneSettings = {
    enabled: true,
    overlapMs: Math.floor(random() * 3) * 100,
    splitBacklogMs: 1 + Math.floor(random() * 3000),
    // History pages shorter than live ones, as by default (lanes.historyPageSize 20, api.pageSize 100).
    historyPageSize: 1 + Math.floor(random() * pageSize),
  };
  const resume = (start: LocationOffset) =>
    new LocationSync({
      locationUid: LOC,
      startOffset: start,
      api,
      enricher: new Enricher({ api, enabled: false, concurrency: 1 }),
      sink,
      metrics: testMetrics(),
      logger: silentLogger(),
      settings: {
        pageSize,
        startSince: null,
        boundaryCap: options.boundaryCap ?? 1000,
        privacy: 'redact-unless-public',
        fingerprints: testFingerprints,
        commitRetry: { ...DEFAULT_RETRY_POLICY, maxAttempts },
        ...(lanes && { lanes: laneSettings }),
      },
      clock: { now: () => (lanes ? NOW : 0), random: () => 0, sleep: async () => {} },
    });
  const stored = () => sink.offsets.get(LOC) ?? EMPTY_OFFSET;

  let sync = resume(EMPTY_OFFSET);
  for (let step = 0; step < 60; step++) {
    const action = random();
    if (action < 0.1) sync = resume(stored());
    else if (action < 0.15) api.expireNextCursors = 1;
    else if (action < 0.2) {
      sink.failNext(1, { ambiguous: random() < 0.5 });
      if (random() < 0.3) sink.failReadsNext(1); // its read-back fails first (Kafka unreachable)
    } else if (action < 0.22)
      sink.producerGeneration += 1; // the producer is initialised again
    else if (action < 0.3) put(`c${created++}`);
    // Between traversals: no traversal open in memory (an idle one stores no cursor) and no cursor stored (an
    // ambiguous commit may have stored one the sync does not know of) that the update could move items behind.
    else if (action < 0.35 && (lanes || (sync.traversalId === null && stored().cursor === null)))
      put(`c${Math.floor(random() * created)}`);
    const lane = lanes && random() < 0.5 ? 'history' : 'live';
    await sync.runPage(undefined, lane).catch(() => undefined); // retriable failures: the scheduler would retry
  }
  api.expireNextCursors = 0;
  if (random() < 0.5) sync = resume(stored());
  for (let complete = 0, tries = 0; (complete < 2 || sync.hasHistory) && tries < 40; tries++) {
    // Scripted sink failures may still be queued: try again, as the scheduler would.
    if (sync.hasHistory) await runHistory(sync).catch(() => undefined);
    else if (
      await runTraversal(sync).then(
        () => true,
        () => false,
      )
    )
      complete += 1;
  }

  const published = sink.calls.map((c) => versionKey(c.uid, c.updatedAt));
  const seen = new Set<string>();
  const doubled = published.filter((key) => seen.has(key) || (seen.add(key), false));
  const lost = [...current].map(([uid, at]) => versionKey(uid, at)).filter((key) => !seen.has(key));
  // Per uid, the versions a read_committed consumer reads, in order: never an older one after a newer one.
  const newestSeen = new Map<string, string>();
  const regressed: string[] = [];
  for (const c of sink.calls) {
    const before = newestSeen.get(c.uid);
    if (before !== undefined && compareDateTimes(c.updatedAt, before) < 0)
      regressed.push(`${versionKey(c.uid, c.updatedAt)} after ${before}`);
    else newestSeen.set(c.uid, c.updatedAt);
  }
  // The compacted topic's end (the last record per uid) is the truth.
  const last = new Map(sink.calls.map((c) => [c.uid, c.updatedAt]));
  const final = [...current]
    .filter(([uid, at]) => last.get(uid) === undefined || compareDateTimes(last.get(uid)!, at) !== 0)
    .map(([uid, at]) => versionKey(uid, at));
  if (sync.hasHistory) final.push('history lane not merged');
  return { doubled, lost, regressed, final };
}

/** Runs history pages until the lanes merge. */
async function runHistory(sync: LocationSync): Promise<void> {
  for (let i = 0; i < 1000; i++) if ((await sync.runPage(undefined, 'history')).complete) return;
  throw new Error('history lane did not merge');
}

const NOW = Date.parse('2024-03-01T13:00:00Z');

describe('LocationSync (randomized)', () => {
  it(
    'publishes every version exactly once whatever crashes, expiries and failed commits happen',
    { timeout: 60_000 },
    async () => {
      expect(
        compareDateTimes(
          spell(() => 0.99, 500),
          spell(() => 0, 500),
        ),
      ).toBe(0);
      for (let seed = 1; seed <= SEEDS; seed++) {
        expect({ seed, ...(await run(seed)) }).toEqual({
          seed,
          doubled: [],
          lost: [],
          regressed: [],
          final: [],
        });
      }
    },
  );

  it(
    'with lanes, publishes every version exactly once, never takes a call back to an older version, and ends on the truth',
    { timeout: 60_000 },
    async () => {
      for (let seed = 1; seed <= SEEDS; seed++) {
        expect({ seed, ...(await run(seed, true)) }).toEqual({
          seed,
          doubled: [],
          lost: [],
          regressed: [],
          final: [],
        });
      }
    },
  );

  it(
    'with lanes and a boundary cap smaller than the groups sharing an instant, loses nothing and never takes a call back (records past the cap may repeat)',
    { timeout: 60_000 },
    async () => {
      for (let seed = 1; seed <= SEEDS / 5; seed++) {
        const { lost, regressed, final } = await run(seed, true, { boundaryCap: 1 + (seed % 3) });
        expect({ seed, lost, regressed, final }).toEqual({ seed, lost: [], regressed: [], final: [] });
      }
    },
  );
});
