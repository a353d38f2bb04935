import { describe, expect, it } from 'vitest';
import { testMetrics } from '../../support/metrics.js';
import type { NudgeOutcome } from '../../../src/sync/scheduler/scheduler.js';
import { ownedLocationNudge, schedulerNudgeSink } from '../../../src/webhooks/scheduler-nudges.js';

describe('the scheduler nudge sink', () => {
  it('nudges every location named, counts each outcome, notes the uid and takes the nudge', async () => {
    const metrics = testMetrics();
    const nudged: string[] = [];
    const announced: string[] = [];
    const outcomes: Record<string, NudgeOutcome> = { L1: 'due_now', L2: 'coalesced', L3: 'unknown' };
    const sink = schedulerNudgeSink({
      target: { nudge: (uid) => (nudged.push(uid), outcomes[uid] ?? 'unknown') },
      metrics,
      ledger: { announced: (uid) => announced.push(uid) },
    });
    await sink.offer({
      uid: 'c1',
      event: 'call.updated',
      locations: ['L1', 'L2', 'L3'],
      resolution: 'grant_fanout',
    });
    expect(nudged).toEqual(['L1', 'L2', 'L3']);
    expect(announced).toEqual(['c1']);
    const text = await metrics.registry.metrics();
    expect(text).toContain('calls_connector_webhook_nudge_outcomes_total{outcome="due_now"} 1');
    expect(text).toContain('calls_connector_webhook_nudge_outcomes_total{outcome="coalesced"} 1');
    // A location not scheduled here is counted and the delivery still acknowledged (the offer resolved).
    expect(text).toContain('calls_connector_webhook_nudge_outcomes_total{outcome="unknown"} 1');
  });
});

describe('a nudge read from the nudge topic', () => {
  it('is acted on, noted and counted only by the instance that schedules its location', async () => {
    const metrics = testMetrics();
    const announced: string[] = [];
    const nudge = ownedLocationNudge({
      target: { nudge: (uid) => (uid === 'mine' ? 'due_now' : 'unknown') },
      metrics,
      ledger: { announced: (uid) => announced.push(uid) },
    });
    nudge({ uid: 'c1', location: 'mine' });
    nudge({ uid: 'c2', location: 'theirs' });
    expect(announced).toEqual(['c1']);
    const text = await metrics.registry.metrics();
    expect(text).toContain('calls_connector_webhook_nudge_outcomes_total{outcome="due_now"} 1');
    expect(text).not.toContain('calls_connector_webhook_nudge_outcomes_total{outcome="unknown"}');
  });
});
