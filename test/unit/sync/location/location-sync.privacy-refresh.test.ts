/**
 * The privacy bound (privacy.maxEnrichmentAgeMs) on a history page read ahead long before its turn: its
 * single calls are asked again in the background, not in its turn, and every enrichment it publishes was
 * answered within the bound of its commit; the location's live poll is not held meanwhile.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_POLICY } from '../../../../src/api/retry-policy.js';
import { testMetrics } from '../../../support/metrics.js';
import { Enricher } from '../../../../src/sync/location/enricher.js';
import { DEFAULT_LANE_SETTINGS } from '../../../../src/sync/lanes/lanes.js';
import type { LocationSync } from '../../../../src/sync/location/location-sync.js';
import type { SingleCall } from '../../../../src/sync/model.js';
import type { CommitOutcome, PageCommit } from '../../../../src/sync/ports.js';
import { ManualClock } from '../../../support/clock.js';
import { FakeCallsApi, type FakeCall } from '../../../support/sync/fake-calls-api.js';
import { InMemorySink } from '../../../support/sync/in-memory-sink.js';
import { unitLocationSync } from '../../../support/sync/unit-location-sync.js';

const LOC = '11111111-1111-1111-1111-111111111111';
const at = (minutes: number) => new Date(Date.parse('2026-11-24T10:00:00Z') + minutes * 60_000).toISOString();
const call = (uid: string, minutes: number): FakeCall => ({ uid, locationUid: LOC, updatedAt: at(minutes) });
const MAX_AGE_MS = 60_000;

/** The API whose single calls take 1 s each on `clock`; each answer names its time in conversationUid. */
class SlowSingleCalls extends FakeCallsApi {
  constructor(
    calls: FakeCall[],
    private readonly clock: ManualClock,
  ) {
    super(calls);
  }

  override async getCall(uid: string): Promise<SingleCall | null> {
    await this.clock.sleep(1_000);
    const single = await super.getCall(uid);
    if (single === null || !single.enrichment.ok) return single;
    const enrichment = { ...single.enrichment.enrichment, conversationUid: `answered-${this.clock.now()}` };
    return { ...single, enrichment: { ok: true, enrichment } };
  }
}

/** A sink that remembers, per published call, the time of its commit. */
class TimedSink extends InMemorySink {
  readonly committedAt = new Map<string, number>();
  constructor(private readonly clock: ManualClock) {
    super();
  }
  override commitPage(commit: PageCommit): Promise<CommitOutcome> {
    for (const c of commit.calls) this.committedAt.set(`${c.uid}@${c.updatedAt}`, this.clock.now());
    return super.commitPage(commit);
  }
}

/** Settles `work`, moving the clock on by 100 ms at a time; fails past `limitMs` of clock. */
async function onClock<T>(
  clock: ManualClock,
  work: Promise<T>,
  limitMs: number,
): Promise<{ value: T; tookMs: number }> {
  const start = clock.now();
  let result: { value: T } | null = null;
  let failure: { error: unknown } | null = null;
  work.then(
    (value) => (result = { value }),
    (error: unknown) => (failure = { error }),
  );
  for (;;) {
    for (let i = 0; i < 20; i++) await Promise.resolve();
    if (failure !== null) throw (failure as { error: unknown }).error;
    if (result !== null) return { value: (result as { value: T }).value, tookMs: clock.now() - start };
    if (clock.now() - start >= limitMs) throw new Error(`not settled within ${limitMs} ms of clock`);
    clock.advance(100);
  }
}

/** A split location with a 100-call history page read ahead (ready), its single calls taking 1 s each. */
async function readAhead() {
  const start = Date.parse(at(200));
  const clock = new ManualClock(start);
  const history = Array.from({ length: 100 }, (_, i) => call(`h${String(i).padStart(3, '0')}`, i));
  const api = new SlowSingleCalls([...history, call('n0', 159), call('n1', 160)], clock);
  api.keysetCursors = true;
  const sink = new TimedSink(clock);
  const sync: LocationSync = unitLocationSync({
    locationUid: LOC,
    api,
    enricher: new Enricher({ api, enabled: true, concurrency: 8, clock }),
    sink,
    metrics: testMetrics(),
    settings: {
      pageSize: 100,
      maxEnrichmentAgeMs: MAX_AGE_MS,
      commitRetry: { ...DEFAULT_RETRY_POLICY, maxAttempts: 2 },
      lanes: { ...DEFAULT_LANE_SETTINGS, historyPageSize: 100 },
    },
    clock,
  });
  await onClock(clock, sync.runPage(), 10_000); // split, the live lane: n0, n1

  // The history page (100 calls) is read ahead: listed, its single calls answered.
  sync.prefetchHistory();
  const ahead = sync.historyAhead();
  if (ahead.state === 'pending') await onClock(clock, ahead.settled, 60_000);
  expect(sync.historyAhead().state).toBe('ready');
  return { sync, api, clock, sink };
}

/** Every history call published enriched, on an answer within the bound of its commit. */
function expectWithinBound(sink: TimedSink): void {
  const published = sink.calls.filter((c) => c.uid.startsWith('h'));
  expect(published).toHaveLength(100);
  for (const c of published) {
    expect(c.enriched).toBe(true);
    const answeredAt = Number((c.conversationUid ?? '').replace('answered-', ''));
    const committedAt = sink.committedAt.get(`${c.uid}@${c.updatedAt}`) ?? Number.NaN;
    expect(answeredAt).toBeGreaterThanOrEqual(committedAt - MAX_AGE_MS);
  }
}

describe('LocationSync: the privacy refresh of a history page that waited', () => {
  it('refreshes a 100-call page read ahead 2 min before its turn in the background: its turn holds no live poll, and every enrichment it publishes is within the bound', async () => {
    const { sync, api, clock, sink } = await readAhead();

    // Its turn comes 2 min later. Asking its 100 calls again takes 13 s: not in the turn.
    clock.advance(120_000);
    const turn = await onClock(clock, sync.runPage(undefined, 'history'), 1_000);
    expect(turn.value).toMatchObject({ lane: 'history', published: 0 });
    expect(turn.tookMs).toBe(0);
    // A nudge to the location meanwhile: its live poll runs at once (a change, 1 s for its single call).
    api.upsert(call('n2', 161));
    const nudged = await onClock(clock, sync.runPage(), 5_000);
    expect(nudged.value).toMatchObject({ lane: 'live', published: 1 });
    expect(nudged.tookMs).toBeLessThanOrEqual(2_000);

    // Refreshed in the background; the next turn commits it.
    const refreshing = sync.historyAhead();
    expect(refreshing.state).toBe('pending');
    if (refreshing.state === 'pending') await onClock(clock, refreshing.settled, 60_000);
    const commit = await onClock(clock, sync.runPage(undefined, 'history'), 1_000);
    expect(commit.value).toMatchObject({ lane: 'history', published: 100 });
    expect(commit.tookMs).toBe(0);
    expectWithinBound(sink);
  });

  it('refreshes a page read ahead whose answers near the bound before a turn takes it: pending meanwhile, then committed at once', async () => {
    const { sync, clock, sink } = await readAhead();
    clock.advance(50_000); // its oldest answers are 50 s old: within the bound, but not for long
    const refreshing = sync.historyAhead();
    expect(refreshing.state).toBe('pending');
    if (refreshing.state === 'pending') await onClock(clock, refreshing.settled, 60_000);
    expect(sync.historyAhead().state).toBe('ready');
    const commit = await onClock(clock, sync.runPage(undefined, 'history'), 1_000);
    expect(commit.value).toMatchObject({ lane: 'history', published: 100 });
    expect(commit.tookMs).toBe(0);
    expectWithinBound(sink);
  });
});
