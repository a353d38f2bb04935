import { describe, expect, it } from 'vitest';
import {
  committedRecoveryMs,
  deadlineAcross,
  deadlineOf,
  disruptedUntil,
  fairIntervalMs,
  freshnessRecord,
  freshnessViolation,
  judgeFreshness,
  judgeRecord,
  ownRecoveryAllowanceMs,
  Publications,
  quantile,
  type Change,
  type FaultWindow,
} from '../../../tools/chaos/freshness.js';
import { faultWindow as window, T0 } from '../../support/fault-window.js';

/** A quota hold from +12 s to +30 s, committing again 5 s later, its grant asked again within 10 s. */
const quotaHold = (overrides: Partial<FaultWindow> = {}): FaultWindow =>
  window({
    kind: 'api-grant-quota-spent',
    startMs: T0 + 12_000,
    endMs: T0 + 30_000,
    untilMs: T0 + 100_000,
    recoveryMs: 5_000,
    allowanceMs: 10_000,
    ...overrides,
  });

const change = (uid: string, madeAtMs: number, updatedAtMs = madeAtMs): Change => ({
  uid,
  locationUid: 'l1',
  updatedAtMs,
  madeAtMs,
});

describe('the chaos freshness rule', () => {
  it("lets a change made during a fault wait until the fault's recovery, one made after it two intervals", () => {
    // During: from the recovery at +13 s, plus 2 × 2 s.
    expect(deadlineOf(change('a', T0 + 5_000), window())).toBe(T0 + 17_000);
    // Long after the recovery: from its making.
    expect(deadlineOf(change('b', T0 + 40_000), window())).toBe(T0 + 44_000);
    // Distributed mode: a handover longer than the recovery holds the paused instance's locations.
    expect(deadlineOf(change('c', T0 + 5_000), window({ handoverMs: 20_000 }))).toBe(T0 + 24_000);
    // A kind's own allowance (a parked grant asked again every 10 s) comes on top.
    expect(deadlineOf(change('d', T0 + 5_000), window({ allowanceMs: 10_000 }))).toBe(T0 + 27_000);
    // No recovery within the cap: the cap stands in.
    expect(deadlineOf(change('e', T0), window({ recoveryMs: null }))).toBe(T0 + 10_000 + 240_000 + 4_000);
  });

  it("pushes a change's deadline on by a later fault that starts before its own deadline, one step only", () => {
    const own = window({ untilMs: T0 + 12_000 });
    const hold = quotaHold();
    // Made at +11 s: its own deadline is +17 s, and the hold starts at +12 s: +35 s + 10 s + 4 s.
    expect(deadlineAcross(change('a', T0 + 11_000), [own, hold], 0)).toBe(T0 + 49_000);
    // A fault that starts after the change's deadline does not excuse it.
    const late = { ...hold, startMs: T0 + 18_000 };
    expect(deadlineAcross(change('b', T0 + 5_000), [own, late], 0)).toBe(T0 + 17_000);
    // Its own window alone when it is the last.
    expect(deadlineAcross(change('c', T0 + 5_000), [own], 0)).toBe(T0 + 17_000);
    // One step only: a fault starting within the hold's deadline but after the change's own does not push on.
    const next = { ...hold, startMs: T0 + 40_000, endMs: T0 + 80_000 };
    expect(deadlineAcross(change('d', T0 + 11_000), [own, hold, next], 0)).toBe(T0 + 49_000);
  });

  it("judges a change caught by a quota hold and then a kill of its owner by the hold's deadline, late when it was slow after the hold", () => {
    // Made at +11 s, 2 s before a broker kill's recovery: alone it would have until +17 s.
    const own = window({ untilMs: T0 + 12_000 });
    // A quota hold from +12 s, committing again at +35 s, its grant asked again within 10 s: until +49 s.
    const hold = quotaHold({ untilMs: T0 + 40_000 });
    // Its owner killed at +40 s, after the change's own deadline: restarted at +41 s, committing 8 s later.
    const kill = window({
      kind: 'connector-kill',
      startMs: T0 + 40_000,
      endMs: T0 + 41_000,
      untilMs: T0 + 60_000,
      recoveryMs: 8_000,
    });
    const windows = [own, hold, kill];
    // The kill does not push the hold's deadline on (that would be +53 s).
    expect(deadlineAcross(change('a', T0 + 11_000), windows, 0)).toBe(T0 + 49_000);
    const published = new Publications();
    published.add('a', T0 + 11_000, T0 + 51_000);
    const figures = judgeFreshness(windows, [change('a', T0 + 11_000)], published, T0);
    expect(figures.map((f) => f.late)).toEqual([1, 0, 0]);
    expect(figures[0]?.samples).toEqual([
      'a (location l1) made at +11.0 s: in Kafka after 40.0 s, allowed 38.0 s',
    ]);
  });

  it('judges a change caught by an API limit, a kill elsewhere and a SIGSTOP of its owner by one step, late when it was slow between them', () => {
    // An API limit from +0 s to +10 s, committing again at +13 s, its budget stretching the interval to 4 s.
    const limit = window({
      kind: 'api-limit-below-live-demand',
      untilMs: T0 + 13_000,
      effectiveIntervalMs: 4_000,
    });
    // Another instance killed at +13 s, as the limit recovered: ownership whole again at +33 s, the change's
    // owner running and the API answering all along.
    const kill = window({
      kind: 'connector-kill',
      startMs: T0 + 13_000,
      endMs: T0 + 14_000,
      untilMs: T0 + 33_000,
      recoveryMs: 2_000,
      handoverMs: 20_000,
    });
    // The change's owner stopped at +33 s, as ownership was whole again: its locations taken over at +48 s.
    const sigstop = window({
      kind: 'sigstop-long',
      startMs: T0 + 33_000,
      endMs: T0 + 48_000,
      untilMs: T0 + 70_000,
      recoveryMs: 1_000,
      handoverMs: 15_000,
    });
    const windows = [limit, kill, sigstop];
    // Made at +9 s: its own deadline +13 s + 8 s; the kill starts before it, until +33 s + 4 s; the SIGSTOP
    // starts after +21 s and does not push on (chained, the change would have until +53 s).
    expect(deadlineAcross(change('a', T0 + 9_000), windows, 0)).toBe(T0 + 37_000);
    const published = new Publications();
    published.add('a', T0 + 9_000, T0 + 45_000);
    published.add('b', T0 + 10_000, T0 + 30_000);
    const figures = judgeFreshness(
      windows,
      [change('a', T0 + 9_000), change('b', T0 + 10_000)],
      published,
      T0,
    );
    expect(figures[0]).toMatchObject({ changes: 2, late: 1, boundMs: 28_000 });
    expect(figures[0]?.samples).toEqual([
      'a (location l1) made at +9.0 s: in Kafka after 36.0 s, allowed 28.0 s',
    ]);
  });

  it("holds a change made while an earlier fault still disrupts to that fault's deadline too, one step only", () => {
    // A quota hold from +0 s to +20 s, its grant asked again 10 s after its recovery: disrupted until +32 s.
    const hold = window({
      kind: 'api-grant-quota-spent',
      endMs: T0 + 20_000,
      untilMs: T0 + 10_000,
      recoveryMs: 2_000,
      allowanceMs: 10_000,
    });
    expect(disruptedUntil(hold)).toBe(T0 + 32_000);
    // A broker kill from +10 s, recovered at +15 s; a change made at +11 s belongs to it: +19 s alone.
    const kill = window({
      startMs: T0 + 10_000,
      endMs: T0 + 12_000,
      untilMs: T0 + 30_000,
      recoveryMs: 3_000,
    });
    // A registry outage from +30 s, after the change's own deadline, before the hold's.
    const outage = window({
      kind: 'registry-stop',
      startMs: T0 + 30_000,
      endMs: T0 + 50_000,
      untilMs: T0 + 60_000,
      recoveryMs: 1_000,
    });
    // Held by the hold: +22 s + 10 s + 4 s; the outage does not push the hold's deadline on (+55 s).
    expect(deadlineAcross(change('a', T0 + 11_000), [hold, kill, outage], 1)).toBe(T0 + 36_000);
    // Made once the hold's disruption is over: its own deadline only (held, it would have +47 s).
    const longKill = { ...kill, untilMs: T0 + 60_000 };
    expect(deadlineAcross(change('b', T0 + 33_000), [hold, longKill], 1)).toBe(T0 + 37_000);
  });

  it('takes as recovery the first committed record after the fault when it comes later than the run saw progress', () => {
    const publications = new Publications();
    publications.add('u1', 1, T0 + 2_000);
    publications.add('u2', 1, T0 + 31_000);
    publications.add('u3', 1, T0 + 40_000);
    // The run saw the stable offsets move 1 s after the end (an abort marker), the witness the first commit at +31 s.
    expect(committedRecoveryMs(1_000, T0 + 5_000, publications)).toBe(26_000);
    // Progress the run saw later than the first commit stands.
    expect(committedRecoveryMs(30_000, T0 + 5_000, publications)).toBe(30_000);
    expect(committedRecoveryMs(null, T0 + 5_000, publications)).toBeNull();
    expect(committedRecoveryMs(1_000, T0 + 50_000, publications)).toBe(1_000);
    expect(publications.firstAfter(T0 + 31_000)).toBe(T0 + 40_000);
  });

  it("judges against the configured interval, or the longer one the API's budget implies, never the connector's own stretch", () => {
    // One slow traversal stretched everyone to 119 s while the budget allows 2 s: judged at 2 s (fairIntervalMs
    // takes no gauge at all: a stretch beyond the budget is never excused).
    expect(fairIntervalMs(2_000, 200)).toBe(2_000);
    // A hidden limit of 3 requests/s for 12 locations implies 5.3 s, whatever the gauge says.
    expect(fairIntervalMs(2_000, 5_333)).toBe(5_333);
  });

  it("times a change to its version's first record, or to the first of a newer version that superseded it", () => {
    const published = new Publications();
    published.add('a', 100, T0 + 9_000);
    published.add('a', 100, T0 + 7_000);
    published.add('b', 300, T0 + 5_000);
    published.add('c', 100, null);
    expect(published.firstCovering('a', 100)).toBe(T0 + 7_000);
    // b's version 200 was never published: version 300 carried it to Kafka.
    expect(published.firstCovering('b', 200)).toBe(T0 + 5_000);
    expect(published.firstCovering('b', 400)).toBeNull();
    expect(published.firstCovering('c', 100)).toBeNull();
  });

  it("gives each fault's changes their p50, p99 and max, and names those past the bound", () => {
    const published = new Publications();
    const changes: Change[] = [];
    // 100 changes in the window, each in Kafka 1 s after it was made...
    for (let i = 0; i < 100; i++) {
      const madeAt = T0 + 20_000 + i * 100;
      changes.push(change(`u${i}`, madeAt));
      published.add(`u${i}`, madeAt, madeAt + 1_000);
    }
    // ...but one made at +30 s waited 9 s (allowed 4 s), one never arrived, one belongs to the next fault.
    changes.push(change('slow', T0 + 30_000));
    published.add('slow', T0 + 30_000, T0 + 39_000);
    changes.push(change('gone', T0 + 31_000));
    changes.push(change('next', T0 + 61_000));
    published.add('next', T0 + 61_000, T0 + 200_000);
    const [figures] = judgeFreshness([window()], changes, published, T0 - 5_000);
    expect(figures).toMatchObject({
      kind: 'broker-kill',
      atS: 5,
      changes: 102,
      unpublished: 1,
      p50Ms: 1_000,
      p99Ms: 1_000,
      maxMs: 9_000,
      late: 2,
    });
    expect(figures?.samples).toEqual([
      'slow (location l1) made at +35.0 s: in Kafka after 9.0 s, allowed 4.0 s',
      'gone (location l1): never in Kafka',
    ]);
    expect(freshnessViolation(figures!)).toMatch(
      /^freshness: broker-kill at \+5 s: 2 of 102 changes waited past the fault's recovery plus two effective intervals \(2\.0 s each; e\.g\. slow/,
    );
  });

  it('passes a fault whose changes all arrived in time, and says nothing of it', () => {
    const published = new Publications();
    published.add('a', T0 + 1_000, T0 + 14_000);
    const [figures] = judgeFreshness([window()], [change('a', T0 + 1_000)], published, T0);
    expect(figures?.late).toBe(0);
    expect(freshnessViolation(figures!)).toBeNull();
  });

  it('reads quantiles by nearest rank', () => {
    expect(quantile([], 0.99)).toBeNull();
    expect(quantile([5], 0.99)).toBe(5);
    expect(quantile([1, 2, 3, 4], 0.5)).toBe(2);
    expect(quantile([1, 2, 3, 4], 0.99)).toBe(4);
  });

  const settings = {
    maxRetryAfterMs: 10_000,
    stoppedRetryInitialDelayMs: 10_000,
    slowStartAfterMs: 20_000,
    slowStartGrowth: 0.15,
  };

  it("allows a parked grant its re-ask interval and a lost grant the operator's login and the stopped retry", () => {
    expect(ownRecoveryAllowanceMs('api-grant-quota-spent', settings)).toBe(10_000);
    expect(ownRecoveryAllowanceMs('refresh-kill', settings)).toBe(40_000);
    expect(ownRecoveryAllowanceMs('connector-kill', settings)).toBe(0);
  });

  it("allows a hidden limit below the live demand the learned rate's probe for its end: slow start again, then the climb", () => {
    // 20 s to slow start again, then ln 3 / 0.15 = 7.3 s from a third of the demand to the demand.
    expect(ownRecoveryAllowanceMs('api-limit-below-live-demand', settings)).toBe(27_325);
    // The limit that live demand fits in needs no probe beyond its interval.
    expect(ownRecoveryAllowanceMs('api-limit-reset-forms', settings)).toBe(0);
  });

  it('judges a run again from the inputs it recorded exactly as the run judged them', () => {
    const published = new Publications();
    // a's first version was superseded before its poll; b's first record came after its newer version's.
    published.add('a', T0 + 2_000, T0 + 9_000);
    published.add('a', T0 + 1_000, T0 + 30_000);
    published.add('b', T0 + 3_000, T0 + 20_000);
    published.add('b', T0 + 4_000, T0 + 8_000);
    published.add('c', T0 + 61_000, T0 + 62_000);
    const changes = [
      change('a', T0 + 1_000),
      change('a', T0 + 2_000),
      change('b', T0 + 3_000),
      change('b', T0 + 4_000),
      change('gone', T0 + 5_000),
      change('c', T0 + 61_000),
    ];
    const windows = [window(), window({ startMs: T0 + 60_000, endMs: T0 + 61_000, untilMs: T0 + 90_000 })];
    const record = freshnessRecord(windows, changes, published, T0 - 1_000);
    expect(record.changes.map((c) => c.inKafkaAtMs)).toEqual([
      T0 + 9_000,
      T0 + 9_000,
      T0 + 8_000,
      T0 + 8_000,
      null,
      T0 + 62_000,
    ]);
    const again = judgeRecord(JSON.parse(JSON.stringify(record)) as typeof record);
    expect(again).toEqual(judgeFreshness(windows, changes, published, T0 - 1_000));
    expect(again.map((f) => f.late)).toEqual([1, 0]);
  });
});
