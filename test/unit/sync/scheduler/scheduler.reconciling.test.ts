import { describe, expect, it } from 'vitest';
import { pollPhase } from '../../../../src/sync/scheduler/poll-phase.js';
import { settles } from '../../../support/async.js';
import { ManualClock } from '../../../support/clock.js';
import { loc, started, testScheduler } from '../../../support/sync/scheduler-harness.js';
import { ScriptedLocation } from '../../../support/sync/scripted-location.js';

const INTERVAL_MS = 900_000;

/** A location whose phase instant comes less than half an interval after the clock's start (0). */
function earlyPhased(): string {
  for (let i = 1; i < 100; i++) if (pollPhase(loc(i)) < 0.4) return loc(i);
  throw new Error('no location of phase < 0.4 among loc(1..99)');
}

async function nextRunAfterFirstPoll(reconciling: boolean): Promise<number> {
  const clock = new ManualClock();
  const location = new ScriptedLocation(earlyPhased(), clock);
  const { scheduler } = testScheduler({
    locations: [location],
    clock,
    settings: { intervalMs: INTERVAL_MS, reconciling },
  });
  const run = started(scheduler);
  await settles(() => location.runs.length === 1 && clock.pending > 0, 'the first poll');
  const next = scheduler.status()[0]?.nextRunAt ?? Number.NaN;
  await run.stop();
  return next - clock.now();
}

describe('Scheduler with reconciliation polls (webhooks on)', () => {
  it('polls a location next at its phase instant however soon while polls bring the changes', async () => {
    const phaseMs = pollPhase(earlyPhased()) * INTERVAL_MS;
    expect(await nextRunAfterFirstPoll(false)).toBeCloseTo(phaseMs, 6);
  });

  it('skips a phase instant less than half an interval away once polls are the safety net, so a start polls no location twice in its first round', async () => {
    const phaseMs = pollPhase(earlyPhased()) * INTERVAL_MS;
    expect(await nextRunAfterFirstPoll(true)).toBeCloseTo(phaseMs + INTERVAL_MS, 6);
  });
});
