import { describe, expect, it } from 'vitest';
import { waitReason, type WaitFigures } from '../../../../src/sync/scheduler/wait-reason.js';

const figures = (over: Partial<WaitFigures> = {}): WaitFigures => ({
  nowMs: 10_000,
  state: 'waiting',
  lane: 'live',
  dueAt: 70_000,
  nudged: false,
  checked: true,
  consecutiveFailures: 0,
  stoppedBy: null,
  holdEndsAt: null,
  configuredMs: 60_000,
  effectiveMs: 60_000,
  workerFactor: 1,
  ...over,
});

describe('waitReason', () => {
  it('says the interval, or the stretch and what bounds it', () => {
    expect(waitReason(figures())).toEqual({ kind: 'interval', nextRunAt: 70_000, intervalMs: 60_000 });
    expect(waitReason(figures({ effectiveMs: 120_000, workerFactor: 2 }))).toMatchObject({
      kind: 'stretch',
      by: 'workers',
    });
    expect(waitReason(figures({ effectiveMs: 120_000 }))).toMatchObject({ kind: 'stretch', by: 'requests' });
  });

  it("says a grant's hold before anything but a page running or a stop", () => {
    expect(waitReason(figures({ state: 'throttled', holdEndsAt: 40_000 }))).toEqual({
      kind: 'hold',
      until: 40_000,
    });
    expect(waitReason(figures({ state: 'running', lane: 'history', holdEndsAt: 40_000 }))).toEqual({
      kind: 'running',
      lane: 'history',
    });
  });

  it('says a location due now waits for a worker, as a nudge, a scheduled poll or a first traversal', () => {
    expect(waitReason(figures({ dueAt: 9_000, nudged: true }))).toEqual({
      kind: 'worker',
      as: 'nudge',
      dueSinceMs: 9_000,
    });
    expect(waitReason(figures({ dueAt: 9_000, checked: false }))).toMatchObject({ as: 'check' });
  });

  it('says a backoff and a stop', () => {
    expect(waitReason(figures({ state: 'backoff', consecutiveFailures: 3 }))).toEqual({
      kind: 'backoff',
      nextRunAt: 70_000,
      consecutiveFailures: 3,
    });
    expect(waitReason(figures({ state: 'stopped', stoppedBy: 'API_FORBIDDEN', dueAt: Infinity }))).toEqual({
      kind: 'stopped',
      code: 'API_FORBIDDEN',
      nextRunAt: null,
    });
  });
});
