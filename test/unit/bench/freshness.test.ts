import { describe, expect, it } from 'vitest';
import { delayParts } from '../../../bench/freshness.js';
import { pollPhase } from '../../../src/sync/scheduler/poll-phase.js';

describe('freshness delay parts', () => {
  it("splits a change's delay into the wait for its location's scheduled poll, that poll to the send, and the send to the read", () => {
    const locationUid = '00000000-0000-4000-8000-000000000001';
    const phaseMs = pollPhase(locationUid) * 10_000;
    const scheduled = 1_000_000 * 10_000 + phaseMs; // a phase instant of a 10 s interval
    const parts = delayParts(
      {
        locationUid,
        updatedAtMs: scheduled - 4_000,
        sentAtMs: scheduled + 300,
        receivedAtMs: scheduled + 450,
      },
      10_000,
    );
    expect(parts.toScheduledPoll).toBeCloseTo(4, 6);
    expect(parts.pollToSend).toBeCloseTo(0.3, 6);
    expect(parts.sendToRead).toBeCloseTo(0.15, 6);
    expect(parts.total).toBeCloseTo(parts.toScheduledPoll + parts.pollToSend + parts.sendToRead, 6);
  });

  it('shows a skipped poll as a poll-to-send part of a whole interval', () => {
    const locationUid = '00000000-0000-4000-8000-000000000002';
    const scheduled = 1_000_000 * 10_000 + pollPhase(locationUid) * 10_000;
    const parts = delayParts(
      {
        locationUid,
        updatedAtMs: scheduled - 4_500,
        sentAtMs: scheduled + 10_100,
        receivedAtMs: scheduled + 10_110,
      },
      10_000,
    );
    expect(parts.toScheduledPoll).toBeCloseTo(4.5, 6);
    expect(parts.pollToSend).toBeCloseTo(10.1, 6);
  });
});
