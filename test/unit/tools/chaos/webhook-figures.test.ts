import { describe, expect, it } from 'vitest';
import { Publications, type Change } from '../../../../tools/chaos/freshness.js';
import type { FaultOutcome } from '../../../../tools/chaos/summary.js';
import { announcedChanges, faultSpans, webhookFigures } from '../../../../tools/chaos/webhook-figures.js';
import type { DeliveryAttempt } from '../../../../tools/chaos/webhook-judge.js';

const taken = (uid: string, at: number, over: Partial<DeliveryAttempt> = {}): DeliveryAttempt => ({
  origin: 'sender',
  receivedAtMs: at,
  answeredAtMs: at + 5,
  id: `msg_${uid}_${at}`,
  uid,
  locationUid: 'loc-1',
  signed: true,
  process: 'connector-1',
  forwardedTo: 'connector-1',
  status: 202,
  outcome: 'accepted',
  ...over,
});

const changeOf = (uid: string, madeAtMs: number, updatedAtMs = madeAtMs): Change => ({
  uid,
  locationUid: 'loc-1',
  madeAtMs,
  updatedAtMs,
});

/** A hidden limit from 5 s to 20 s, a page committed 0.05 s after its end; its kind's probe allowance. */
const hiddenLimit = {
  kind: 'api-limit-below-live-demand',
  startMs: 5000,
  endMs: 20_000,
  recoveryMs: 50,
} as FaultOutcome;
const probe = (kind: string) => (kind === hiddenLimit.kind ? 27_325 : 0);

describe('the webhook figures of a run', () => {
  it("ties a taken delivery to its uid's latest change made before it arrived", () => {
    const publications = new Publications();
    publications.add('a', 1000, 1500);
    publications.add('a', 2000, 2600);
    const changes = [changeOf('a', 1000), changeOf('a', 2000)];
    const announced = announcedChanges(
      changes,
      [taken('a', 1010), taken('a', 2010), taken('a', 2100, { status: 503, outcome: 'unavailable' })],
      publications,
    );
    expect(announced.map((c) => [c.takenAtMs, c.publishedAtMs])).toEqual([
      [1015, 1500],
      [2015, 2600],
    ]);
  });

  it("leaves a change unannounced when its only deliveries were refused, forged or the attacker's", () => {
    const announced = announcedChanges(
      [changeOf('a', 1000)],
      [
        taken('a', 1010, { status: 502, process: null, outcome: null }),
        taken('a', 1020, { signed: false }),
        taken('a', 1030, { origin: 'replay-flood' }),
      ],
      new Publications(),
    );
    expect(announced[0]?.takenAtMs).toBeNull();
    expect(announced[0]?.publishedAtMs).toBeNull();
  });

  it('spans each fault from its start to its end plus recovery, and the start-up before the fault phase', () => {
    const fault = { kind: 'connector-kill', startMs: 5000, endMs: 6000, recoveryMs: 2000 } as FaultOutcome;
    expect(faultSpans([fault], 3000)).toEqual([
      { fromMs: 0, untilMs: 3000 },
      { fromMs: 5000, untilMs: 8000 },
    ]);
  });

  it('holds a distributed fault open until ownership was whole again when that came after its recovery', () => {
    const fault = {
      kind: 'webhook-broker-restart',
      startMs: 5000,
      endMs: 20_000,
      recoveryMs: 200,
      handoverMs: 38_000,
    } as FaultOutcome;
    expect(faultSpans([fault], 3000)[1]).toEqual({ fromMs: 5000, untilMs: 43_000 });
  });

  it('holds a fault open for what its kind needs to notice its own end, as the freshness rule does', () => {
    // The learned rate's probe finds the limit's end 27.3 s after a page was committed again: a change made
    // meanwhile still waits for the fault, not for a lost nudge.
    expect(faultSpans([hiddenLimit], 3000, probe)[1]).toEqual({ fromMs: 5000, untilMs: 47_375 });
    const kill = { kind: 'connector-kill', startMs: 5000, endMs: 6000, recoveryMs: 2000 } as FaultOutcome;
    expect(faultSpans([kill], 3000, probe)[1]).toEqual({ fromMs: 5000, untilMs: 8000 });
  });

  it('does not count a change made while a hidden limit is probed for among the changes outside the faults', () => {
    // Seed 3901: a change taken 0.009 s after it was made, 0.07 s after the limit ended, in Kafka 20.9 s later.
    const publications = new Publications();
    publications.add('a', 20_070, 40_970);
    const figures = (allowanceMs?: (kind: string) => number) =>
      webhookFigures({
        attempts: [taken('a', 20_079)],
        changes: [changeOf('a', 20_070)],
        publications,
        faults: [hiddenLimit],
        quietFromMs: 1000,
        sharedReplayWindow: false,
        ...(allowanceMs !== undefined && { allowanceMs }),
      });
    expect(figures().attribution.deliveredOutside.count).toBe(1);
    const held = figures(probe);
    expect(held.attribution.deliveredOutside.count).toBe(0);
    expect(held.late).toBeNull();
  });

  it("reports a delivered p99 outside the fault windows over the goal as late, and the judge's violations", () => {
    const publications = new Publications();
    publications.add('a', 10_000, 13_500);
    const figures = webhookFigures({
      attempts: [taken('a', 10_010), taken('x', 10_020, { signed: false, origin: 'forged-flood' })],
      changes: [changeOf('a', 10_000)],
      publications,
      faults: [],
      quietFromMs: 1000,
      sharedReplayWindow: false,
    });
    expect(figures.attribution.deliveredOutside.p99Ms).toBe(3500);
    expect(figures.late).toMatch(/p99 3\.50 s, over the goal of 2 s/);
    expect(figures.violations.join()).toMatch(/forged request\(s\) answered 2xx/);
  });

  it('holds distributed runs to the shared replay window, excusing an original taken in a fault window', () => {
    const run = (startMs: number) =>
      webhookFigures({
        attempts: [
          taken('b', 1_000, { process: 'connector-2' }),
          taken('a', 20_000, { id: 'msg_a' }),
          taken('a', 25_000, { id: 'msg_a', process: 'connector-2', origin: 'replay-flood' }),
        ],
        changes: [],
        publications: new Publications(),
        faults: [
          {
            kind: 'webhook-broker-restart',
            startMs,
            endMs: startMs + 1_000,
            recoveryMs: 1_000,
          } as FaultOutcome,
        ],
        quietFromMs: 500,
        sharedReplayWindow: true,
      });
    expect(run(60_000).violations.join()).toMatch(
      /1 replay\(s\) of a delivery another instance took answered 202 more than 1 s/,
    );
    expect(run(60_000).sharedReplayBoundMs).toBe(1_000);
    expect(run(19_000).violations).toEqual([]);
    expect(run(19_000).counts.replays).toMatchObject({ takenByOther: 1, takenByOtherLate: 0 });
  });
});
