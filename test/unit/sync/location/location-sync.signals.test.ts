/**
 * LocationSync carrying out the signals accepted for its location (signal-steps-rule.ts): a reset's offset and a
 * backfill's history lane committed before the page, the backfill's records tagged, its merge completing it, and
 * a signal handed again after a restart finished rather than repeated.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_POLICY } from '../../../../src/api/retry-policy.js';
import { testMetrics } from '../../../support/metrics.js';
import { DEFAULT_LANE_SETTINGS } from '../../../../src/sync/lanes/lanes.js';
import { Enricher } from '../../../../src/sync/location/enricher.js';
import type { LocationSync } from '../../../../src/sync/location/location-sync.js';
import { EMPTY_OFFSET, type LocationOffset } from '../../../../src/sync/model.js';
import type { LocationSignal } from '../../../../src/sync/ports.js';
import { PendingSignals } from '../../../support/sync/pending-signals.js';
import { FakeCallsApi, type FakeCall } from '../../../support/sync/fake-calls-api.js';
import { InMemorySink } from '../../../support/sync/in-memory-sink.js';
import { unitLocationSync } from '../../../support/sync/unit-location-sync.js';

const LOC = '11111111-1111-1111-1111-111111111111';
const ID = '00000000-0000-4000-8000-000000000001';
const at = (minutes: number) => new Date(Date.parse('2026-11-24T10:00:00Z') + minutes * 60_000).toISOString();
const call = (uid: string, minutes: number): FakeCall => ({ uid, locationUid: LOC, updatedAt: at(minutes) });
const NOW = Date.parse(at(200));
const CALLS = Array.from({ length: 6 }, (_, i) => call(`c${i}`, i * 10));

function build(
  signals: PendingSignals,
  options: { start?: LocationOffset; sink?: InMemorySink; splitBacklogMs?: number } = {},
) {
  const api = new FakeCallsApi(CALLS);
  const sink = options.sink ?? new InMemorySink();
  const sync = unitLocationSync({
    locationUid: LOC,
    startOffset: options.start ?? EMPTY_OFFSET,
    api,
    enricher: new Enricher({ api, enabled: false, concurrency: 1 }),
    sink,
    metrics: testMetrics(),
    signals,
    // Lanes on, never split by the backlog rule: the only history lane is a backfill's.
    settings: {
      commitRetry: DEFAULT_RETRY_POLICY,
      lanes: { ...DEFAULT_LANE_SETTINGS, overlapMs: 0, splitBacklogMs: options.splitBacklogMs ?? 0 },
    },
    clock: { now: () => NOW, random: () => 0, sleep: async () => {} },
  });
  return { sync, sink };
}

async function runLane(sync: LocationSync, lane: 'live' | 'history'): Promise<void> {
  for (let i = 0; i < 50; i++) if ((await sync.runPage(undefined, lane)).complete) return;
  throw new Error(`the ${lane} lane did not complete`);
}

/** A location that published every call once, caught up. */
async function caughtUp(): Promise<{ sink: InMemorySink; offset: LocationOffset }> {
  const { sync, sink } = build(new PendingSignals([]));
  await runLane(sync, 'live');
  expect(sink.calls.map((c) => c.uid)).toEqual(CALLS.map((c) => c.uid));
  return { sink, offset: sync.offset };
}

const backfill = (since: number, until: number): LocationSignal => ({
  id: ID,
  location: LOC,
  acceptedAt: at(100),
  backfill: { since: at(since), until: at(until) },
});

describe('LocationSync carrying out signals', () => {
  it('re-reads a backfill range as a history lane, tags its records, and completes it with the merge', async () => {
    const { sink, offset } = await caughtUp();
    const signals = new PendingSignals([backfill(10, 35)]);
    const { sync } = build(signals, { start: offset, sink });
    await runLane(sync, 'live');
    expect(sync.offset.history).toMatchObject({ since: at(10), until: at(35), signal: ID });
    expect(signals.settledLog).toEqual([[ID, false]]);

    await runLane(sync, 'history');
    // Published again: the range [10, 35) exactly, each record naming the signal; nothing outside it.
    expect(sink.reReads).toEqual([
      { uid: 'c1', signal: ID },
      { uid: 'c2', signal: ID },
      { uid: 'c3', signal: ID },
    ]);
    expect(sink.calls.map((c) => c.uid)).toEqual([...CALLS.map((c) => c.uid), 'c1', 'c2', 'c3']);
    expect(sink.signalsDone).toEqual([ID]);
    expect(signals.settledLog).toEqual([
      [ID, false],
      [ID, true],
    ]);
    expect(sync.offset.history).toBeUndefined();
    expect(sync.offset.signal).toBe(ID);
  });

  it('resets the offset while running: the reset and its done in one commit, then the calls from `to` again', async () => {
    const { sink, offset } = await caughtUp();
    const signals = new PendingSignals([
      { id: ID, location: LOC, acceptedAt: at(100), reset: { to: at(30) } },
    ]);
    const { sync } = build(signals, { start: offset, sink });
    const before = sink.commits;
    await runLane(sync, 'live');
    expect(sink.signalsDone).toEqual([ID]);
    expect(sink.commits).toBeGreaterThan(before + 1);
    expect(sink.calls.slice(CALLS.length).map((c) => c.uid)).toEqual(['c3', 'c4', 'c5']);
    expect(sink.reReads).toEqual([]);
    expect(signals.settledLog).toEqual([[ID, true]]);
  });

  it('finishes a backfill a restart handed over again from where its lane stood, not from its start', async () => {
    const { sink, offset } = await caughtUp();
    const first = new PendingSignals([backfill(0, 55)]);
    const { sync } = build(first, { start: offset, sink });
    await runLane(sync, 'live');
    await sync.runPage(undefined, 'history');
    const stored = sync.offset;
    const reReadBefore = sink.reReads.length;
    expect(stored.history?.watermark).not.toBeNull();

    // A restart: a new LocationSync from the stored offset, the signal handed in again.
    const again = new PendingSignals([backfill(0, 55)]);
    const restarted = build(again, { start: stored, sink }).sync;
    await runLane(restarted, 'live');
    expect(again.settledLog).toEqual([[ID, false]]);
    await runLane(restarted, 'history');
    const reRead = sink.reReads.map((r) => r.uid);
    expect(reRead).toEqual(['c0', 'c1', 'c2', 'c3', 'c4', 'c5']);
    expect(reReadBefore).toBeGreaterThan(0);
    expect(sink.signalsDone).toEqual([ID]);
  });

  it('splits a location reset far back again: the backlog from `to` read as history, the present first', async () => {
    const { sink, offset } = await caughtUp();
    const signals = new PendingSignals([
      { id: ID, location: LOC, acceptedAt: at(100), reset: { to: at(0) } },
    ]);
    // A backlog over 5 minutes is split: the caught-up location is not, the reset one (50 minutes behind) is.
    const { sync } = build(signals, { start: offset, sink, splitBacklogMs: 5 * 60_000 });
    await sync.runPage(undefined, 'live');
    expect(sync.offset.history).toBeUndefined();
    expect(sync.offset.signal).toBe(ID);
    await sync.runPage(undefined, 'live');
    expect(sync.offset.history).toMatchObject({ until: at(50) });
    expect(sync.offset.since).toBe(at(50));
    await runLane(sync, 'live');
    await runLane(sync, 'history');
    // Every call from `to` published again, once (c0 at `to` itself: the filter is inclusive).
    expect(
      sink.calls
        .slice(CALLS.length)
        .map((c) => c.uid)
        .sort(),
    ).toEqual(CALLS.map((c) => c.uid).sort());
  });

  it('settles a signal its offset says was carried out, committing nothing', async () => {
    const { sink, offset } = await caughtUp();
    const signals = new PendingSignals([{ id: ID, location: LOC, acceptedAt: at(100), reset: { to: null } }]);
    const { sync } = build(signals, { start: { ...offset, signal: ID }, sink });
    const commits = sink.commits;
    await runLane(sync, 'live');
    expect(signals.settledLog).toEqual([[ID, true]]);
    expect(sink.commits).toBe(commits);
    expect(sink.signalsDone).toEqual([]);
  });
});
