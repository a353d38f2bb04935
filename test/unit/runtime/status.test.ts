import { describe, expect, it } from 'vitest';
import { configurationStatus, connectorStatus, statusWaitOf } from '../../../src/runtime/status.js';
import { emptyTotals } from '../../../src/sync/location/location-sync.js';
import type { LocationStatus } from '../../../src/sync/scheduler/scheduled-location.js';

function location(uid: string, overrides: Partial<LocationStatus> = {}): LocationStatus {
  return {
    locationUid: uid,
    state: 'waiting',
    offset: {
      since: '2026-01-01T00:00:00Z',
      cursor: null,
      watermark: '2026-01-01T00:00:00Z',
      boundary: ['x'],
    },
    traversalId: null,
    nextRunAt: Date.parse('2026-01-01T00:01:00Z'),
    lastSuccessAt: Date.parse('2026-01-01T00:00:30Z'),
    lastError: null,
    consecutiveFailures: 0,
    stoppedBy: null,
    totals: emptyTotals(),
    backfill: null,
    lane: null,
    ...overrides,
  };
}

describe('connectorStatus', () => {
  it("describes each location as a Kafka Connect task, with Connect's state words and our offset beside them", () => {
    const failed = { code: 'API_UNAVAILABLE', message: 'the calls API failed 8 times', at: 0 };
    const status = connectorStatus('calls', 'host:1', [
      location('a'),
      location('b', {
        state: 'running',
        traversalId: 't-1',
        nextRunAt: null,
        offset: { ...location('b').offset, cursor: 'c2' },
      }),
      location('c', { state: 'backoff', lastError: failed, consecutiveFailures: 2 }),
      location('d', { state: 'stopped', lastError: { ...failed, code: 'CURSOR_LOOP' }, nextRunAt: null }),
      location('e', { state: 'throttled' }),
    ]);

    expect(status).toMatchObject({
      name: 'calls',
      type: 'source',
      connector: { state: 'RUNNING', worker_id: 'host:1' },
    });
    expect(status.tasks.map((t) => [t.id, t.state, t.phase])).toEqual([
      ['a', 'RUNNING', 'waiting'],
      ['b', 'RUNNING', 'running'],
      ['c', 'RESTARTING', 'backoff'],
      ['d', 'FAILED', 'stopped'],
      // Parked until its grant's hold ends (issue 32): running, not failed.
      ['e', 'RUNNING', 'throttled'],
    ]);
    expect(status.tasks[0]).toEqual({
      id: 'a',
      state: 'RUNNING',
      worker_id: 'host:1',
      phase: 'waiting',
      traversal_id: null,
      offset: { since: '2026-01-01T00:00:00Z', cursor: null, watermark: '2026-01-01T00:00:00Z' },
      last_success_at: '2026-01-01T00:00:30.000Z',
      next_run_at: '2026-01-01T00:01:00.000Z',
      consecutive_failures: 0,
    });
    expect(status.tasks[1]).toMatchObject({ traversal_id: 't-1', offset: { cursor: 'c2' } });
    expect(status.tasks[2]?.trace).toBe('API_UNAVAILABLE: the calls API failed 8 times');
    expect(status.tasks[3]?.trace).toBe('CURSOR_LOOP: the calls API failed 8 times');
  });

  it("shows a split location's history lane beside its live offset, and its backfill's progress", () => {
    const until = '2026-01-01T00:00:00.000Z';
    const status = connectorStatus('calls', 'host:1', [
      location('a', {
        offset: {
          ...location('a').offset,
          history: { since: null, cursor: 'h-3', watermark: '2025-12-01T00:00:00Z', boundary: [], until },
        },
        backfill: {
          untilMs: Date.parse(until),
          positionMs: Date.parse('2025-12-01T00:00:00Z'),
          startedAtMs: 0,
          startPositionMs: 0,
          records: 120,
          remainingSeconds: 31 * 86_400,
          rate: 3600.04,
          etaSeconds: 744.02,
        },
      }),
    ]);
    expect(status.tasks[0]).toMatchObject({
      offset: { history: { since: null, cursor: 'h-3', watermark: '2025-12-01T00:00:00Z', until } },
      backfill: {
        until,
        position: '2025-12-01T00:00:00.000Z',
        remaining_seconds: 2_678_400,
        rate: 3600,
        eta_seconds: 744,
        records: 120,
      },
    });
  });

  it('is UNASSIGNED while starting, and FAILED when every location is stopped or the connector hit a fatal error', () => {
    expect(connectorStatus('calls', 'w', null).connector.state).toBe('UNASSIGNED');
    const stopped = location('a', { state: 'stopped', lastError: { code: 'X', message: 'y', at: 0 } });
    expect(connectorStatus('calls', 'w', [stopped]).connector.state).toBe('FAILED');
    expect(
      connectorStatus('calls', 'w', [location('a')], { code: 'KAFKA_FENCED', message: 'another instance' })
        .connector,
    ).toEqual({ state: 'FAILED', worker_id: 'w', trace: 'KAFKA_FENCED: another instance' });
  });

  it('says at the top level which offsets-topic partitions this instance owns, and in which generation', () => {
    const status = connectorStatus('calls', 'host:1', [location('a')], null, {
      partitions: [0, 3],
      generationId: 7,
    });
    expect(status.assignment).toEqual({ partitions: [0, 3], generationId: 7 });
    expect(connectorStatus('calls', 'host:1', null).assignment).toBeUndefined();
  });

  it('shows each rate-limit scope, and the locations of a parked scope as throttled until the hold ends (not failed)', () => {
    const status = connectorStatus('calls', 'host:1', [location('a'), location('b')], null, null, {
      scopes: [
        {
          scope: 'acme',
          ratePerSecond: 7.123,
          announcedPerSecond: null,
          heldUntilMs: Date.parse('2026-11-25T00:00:00Z'),
          heldSeconds: 60,
          throttled: true,
          waiting: { live: 1, backfill: 2 },
        },
        {
          scope: 'other',
          ratePerSecond: 20,
          announcedPerSecond: 25,
          heldUntilMs: null,
          heldSeconds: 0,
          throttled: false,
          waiting: { live: 0, backfill: 0 },
        },
      ],
      scopeOf: (uid) => (uid === 'a' ? 'acme' : 'other'),
    });
    expect(status.rate_limits).toEqual([
      {
        scope: 'acme',
        state: 'throttled',
        rate_per_second: 7.12,
        announced_per_second: null,
        held_until: '2026-11-25T00:00:00.000Z',
        waiting: { live: 1, backfill: 2 },
      },
      {
        scope: 'other',
        state: 'flowing',
        rate_per_second: 20,
        announced_per_second: 25,
        held_until: null,
        waiting: { live: 0, backfill: 0 },
      },
    ]);
    expect(status.tasks.map((t) => [t.id, t.state, t.throttled_until])).toEqual([
      ['a', 'RUNNING', '2026-11-25T00:00:00.000Z'],
      ['b', 'RUNNING', undefined],
    ]);
  });

  it('says whether this instance writes or stands by, and since when (single mode)', () => {
    const since = Date.parse('2026-11-26T17:00:00.000Z');
    const standby = connectorStatus('calls', 'w', [], null, null, null, { role: 'standby', since });
    expect(standby.instance).toEqual({ role: 'standby', since: '2026-11-26T17:00:00.000Z' });
    expect(connectorStatus('calls', 'w', []).instance).toBeUndefined();
  });

  it("shows each location's lag since its last completed live poll began, and why it waits, with the freshness view", () => {
    const now = Date.parse('2026-01-01T00:00:40Z');
    const caughtUp = (at: string) => ({ ...emptyTotals(), caughtUpAt: Date.parse(at) });
    const heldUntil = Date.parse('2026-01-01T00:00:45Z');
    const scope = (name: string, heldUntilMs: number | null) => ({
      scope: name,
      ratePerSecond: 5,
      announcedPerSecond: null,
      heldUntilMs,
      heldSeconds: 0,
      throttled: false,
      waiting: { live: 0, backfill: 0 },
    });
    const status = connectorStatus(
      'calls',
      'host:1',
      [
        location('due', { totals: caughtUp('2026-01-01T00:00:28.04Z') }),
        location('new'),
        location('held', { totals: caughtUp('2026-01-01T00:00:10Z') }),
        location('history', { state: 'running', lane: 'history', nextRunAt: null }),
        location('failing', { state: 'backoff' }),
      ],
      null,
      null,
      {
        scopes: [scope('free', null), scope('busy', heldUntil)],
        scopeOf: (uid) => (uid === 'held' ? 'busy' : 'free'),
      },
      null,
      { nowMs: now, intervalMs: 2_000, effectiveIntervalMs: 2_000 },
    );
    const intervals = { interval_ms: 2_000, effective_interval_ms: 2_000 };
    expect(status.tasks.map((t) => [t.id, t.lag_seconds, t.waiting])).toEqual([
      ['due', 12, { reason: 'interval', until: '2026-01-01T00:01:00.000Z', ...intervals }],
      ['new', null, { reason: 'interval', until: '2026-01-01T00:01:00.000Z', ...intervals }],
      ['held', 30, { reason: 'hold', until: '2026-01-01T00:00:45.000Z', ...intervals }],
      ['history', null, { reason: 'history_turn', until: null, ...intervals }],
      ['failing', null, { reason: 'backoff', until: '2026-01-01T00:01:00.000Z', ...intervals }],
    ]);
  });

  it('names a stretched interval, and takes the reason the scheduler gives over the state', () => {
    const view = { nowMs: 0, intervalMs: 2_000, effectiveIntervalMs: 9_500 };
    const [stretched] = connectorStatus('calls', 'w', [location('a')], null, null, null, null, view).tasks;
    expect(stretched?.waiting).toEqual({
      reason: 'stretched',
      until: '2026-01-01T00:01:00.000Z',
      interval_ms: 2_000,
      effective_interval_ms: 9_500,
    });
    const [given] = connectorStatus('calls', 'w', [location('a')], null, null, null, null, {
      ...view,
      waitReasonOf: () => ({ reason: 'history_turn', untilMs: 5_000 }),
    }).tasks;
    expect(given?.waiting?.reason).toBe('history_turn');
    expect(given?.waiting?.until).toBe('1970-01-01T00:00:05.000Z');
    // Without the view, /status is as before: no lag, no wait reason.
    expect(connectorStatus('calls', 'w', [location('a')]).tasks[0]).not.toHaveProperty('waiting');
  });

  it("names the scheduler's wait reasons as /status does, with when each ends", () => {
    expect(statusWaitOf({ kind: 'running', lane: 'history' })).toEqual({
      reason: 'history_turn',
      untilMs: null,
    });
    expect(statusWaitOf({ kind: 'running', lane: 'live' })).toEqual({ reason: 'running', untilMs: null });
    expect(statusWaitOf({ kind: 'worker', as: 'nudge', dueSinceMs: 1 })).toEqual({
      reason: 'worker',
      untilMs: null,
    });
    expect(statusWaitOf({ kind: 'interval', nextRunAt: 7, intervalMs: 2 })).toEqual({
      reason: 'interval',
      untilMs: 7,
    });
    expect(
      statusWaitOf({ kind: 'stretch', nextRunAt: 9, intervalMs: 5, configuredMs: 2, by: 'requests' }),
    ).toEqual({ reason: 'stretched', untilMs: 9 });
    expect(statusWaitOf({ kind: 'hold', until: 11 })).toEqual({ reason: 'hold', untilMs: 11 });
    expect(statusWaitOf({ kind: 'backoff', nextRunAt: 13, consecutiveFailures: 2 })).toEqual({
      reason: 'backoff',
      untilMs: 13,
    });
    expect(statusWaitOf({ kind: 'stopped', code: 'X', nextRunAt: null })).toEqual({
      reason: 'stopped',
      untilMs: null,
    });
  });
});

describe('configurationStatus', () => {
  it("shows this instance's fingerprint, each fingerprint run with its instance count and names, and whether they agree", () => {
    expect(
      configurationStatus({
        state: 'differs',
        fingerprint: 'f2',
        peers: [
          { fingerprint: 'f1', instances: ['a:1@t', 'b:2@t'] },
          { fingerprint: 'f2', instances: ['c:3@t'] },
        ],
        unreadable: 0,
      }),
    ).toEqual({
      fingerprint: 'f2',
      agreement: 'differs',
      peers: [
        { fingerprint: 'f1', instances: 2, names: ['a:1@t', 'b:2@t'] },
        { fingerprint: 'f2', instances: 1, names: ['c:3@t'] },
      ],
    });
  });

  it('says how many members could not be read, only when some could not', () => {
    expect(configurationStatus({ state: 'unknown', fingerprint: 'f1', peers: [], unreadable: 2 })).toEqual({
      fingerprint: 'f1',
      agreement: 'unknown',
      peers: [],
      unreadable: 2,
    });
  });
});
