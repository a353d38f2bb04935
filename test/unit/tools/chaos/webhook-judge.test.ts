import { describe, expect, it } from 'vitest';
import {
  judgeDeliveries,
  type DeliveryAttempt,
  type SharedReplayRule,
} from '../../../../tools/chaos/webhook-judge.js';

/** A genuine sender attempt of `id` at `process`, received at `at`, answered `ms` later. */
function attempt(over: Partial<DeliveryAttempt> & { at: number; ms?: number }): DeliveryAttempt {
  const { at, ms = 10, ...rest } = over;
  const process = rest.process === undefined ? 'connector-1' : rest.process;
  return {
    forwardedTo: process,
    origin: 'sender',
    receivedAtMs: at,
    answeredAtMs: at + ms,
    id: 'msg_1',
    uid: 'call-1',
    locationUid: 'loc-1',
    signed: true,
    process: 'connector-1',
    status: 202,
    outcome: 'accepted',
    ...rest,
  };
}

describe('the webhook judge', () => {
  it('finds nothing wrong in a delivery taken once and its replay answered replayed', () => {
    const verdict = judgeDeliveries([
      attempt({ at: 0 }),
      attempt({ at: 100, origin: 'replay-flood', status: 200, outcome: 'replayed' }),
    ]);
    expect(verdict.violations).toEqual([]);
    expect(verdict.counts.replays).toMatchObject({ sameProcess: 1, takenAgainSameProcess: 0 });
    expect(verdict.counts).toMatchObject({ deliveryIds: 1, deliveryIdsTaken: 1 });
  });

  it('takes a delivery answered within the millisecond it came for no replay of itself', () => {
    const verdict = judgeDeliveries([
      attempt({ at: 1000, ms: 0 }),
      attempt({ at: 1500, ms: 2, status: 200, outcome: 'replayed' }),
    ]);
    expect(verdict.violations).toEqual([]);
    expect(verdict.counts.replays).toMatchObject({ sameProcess: 1, takenAgainSameProcess: 0 });
  });

  it('makes a forged request answered 2xx a violation, and counts a refused one', () => {
    const verdict = judgeDeliveries([
      attempt({
        at: 0,
        id: 'msg_f1',
        signed: false,
        origin: 'forged-flood',
        status: 401,
        outcome: 'bad_signature',
      }),
      attempt({ at: 5, id: 'msg_f2', signed: false, origin: 'forged-flood', status: 202 }),
    ]);
    expect(verdict.counts.forged).toEqual({ sent: 2, refused: 1, accepted: 1 });
    expect(verdict.violations).toHaveLength(1);
    expect(verdict.violations[0]).toMatch(/1 forged request\(s\) answered 2xx/);
  });

  it('makes a replay taken again by the process that took it a violation', () => {
    const verdict = judgeDeliveries([
      attempt({ at: 0 }),
      attempt({ at: 1000, origin: 'replay-flood', status: 202 }),
    ]);
    expect(verdict.counts.replays.takenAgainSameProcess).toBe(1);
    expect(verdict.violations.join()).toMatch(/taken \(202\) again by the process/);
  });

  it('counts a replay taken by another process apart, not as a violation', () => {
    const verdict = judgeDeliveries([
      attempt({ at: 0 }),
      attempt({ at: 1000, origin: 'replay-flood', process: 'connector-2', status: 202 }),
    ]);
    expect(verdict.violations).toEqual([]);
    expect(verdict.counts.replays).toMatchObject({ otherProcess: 1, takenByOther: 1, sameProcess: 0 });
  });

  describe('in distributed mode, with the replay window shared over the nudge topic', () => {
    const shared: SharedReplayRule = { boundMs: 1_000, excused: (at) => at >= 50_000 && at <= 60_000 };
    /** connector-2 answered its first request at 0: running long before the original at 20 s. */
    const running = attempt({ at: 0, id: 'msg_0', process: 'connector-2' });

    it('makes a replay taken by another instance more than the bound after the original a violation', () => {
      const verdict = judgeDeliveries(
        [
          running,
          attempt({ at: 20_000 }),
          attempt({ at: 21_500, origin: 'replay-flood', process: 'connector-2' }),
        ],
        shared,
      );
      expect(verdict.counts.replays).toMatchObject({ otherProcess: 1, takenByOther: 1, takenByOtherLate: 1 });
      expect(verdict.violations.join()).toMatch(
        /1 replay\(s\) of a delivery another instance took answered 202 more than 1 s after it was taken .*1490 ms after another took it/,
      );
    });

    it('counts, without a violation, a replay taken within the bound and one to an instance started since', () => {
      const verdict = judgeDeliveries(
        [
          running,
          attempt({ at: 20_000 }),
          attempt({ at: 20_500, origin: 'replay-flood', process: 'connector-2' }),
          attempt({
            at: 22_000,
            origin: 'replay-flood',
            process: 'connector-2',
            status: 200,
            outcome: 'replayed',
          }),
          attempt({ at: 15_000, id: 'msg_3', process: 'connector-3' }),
          attempt({ at: 30_000, origin: 'replay-flood', process: 'connector-3' }),
        ],
        shared,
      );
      expect(verdict.violations).toEqual([]);
      expect(verdict.counts.replays).toMatchObject({
        sameProcess: 1,
        otherProcess: 2,
        takenByOther: 2,
        takenByOtherLate: 0,
      });
    });

    it('takes "replayed" from an instance that never took the delivery for no violation once another instance had it', () => {
      const elsewhere = [
        running,
        // Taken by connector-1; its 202 lost to the ingress' timeout in one case, a late 503 in the other.
        attempt({
          at: 20_000,
          ms: 8_000,
          status: 504,
          outcome: null,
          process: null,
          forwardedTo: 'connector-1',
        }),
        attempt({ at: 28_100, process: 'connector-2', status: 200, outcome: 'replayed' }),
        attempt({ at: 30_000, id: 'msg_2', ms: 5_000, status: 503, outcome: 'unavailable' }),
        attempt({ at: 35_100, id: 'msg_2', process: 'connector-2', status: 200, outcome: 'replayed' }),
      ];
      expect(judgeDeliveries(elsewhere, shared).violations).toEqual([]);
      // In single mode (no shared window) a process that never took it has nothing to say "replayed" from.
      expect(judgeDeliveries(elsewhere).violations.join()).toMatch(
        /answered replayed by a process that never took/,
      );
    });

    it('takes "replayed" for no violation from a slow instance that learned the key while the request waited', () => {
      // The first attempt reached connector-1, which answered 8 s later (a busy process): by then connector-2 had
      // taken a later attempt, and connector-1 had read its key from the nudge topic.
      const slow = [
        running,
        attempt({ at: 20_000, ms: 8_200, status: 200, outcome: 'replayed' }),
        attempt({ at: 25_250, process: 'connector-2' }),
      ];
      expect(judgeDeliveries(slow, shared).violations).toEqual([]);
      // Answered before any other instance was reached, "replayed" had no key to come from.
      const early = [
        running,
        attempt({ at: 20_000, ms: 100, status: 200, outcome: 'replayed' }),
        attempt({ at: 25_250, process: 'connector-2' }),
      ];
      expect(judgeDeliveries(early, shared).violations.join()).toMatch(
        /answered replayed by a process that never took/,
      );
    });

    it('excuses an original taken in a fault window, and judges nothing so in single mode', () => {
      const inFault = [running, attempt({ at: 55_000 }), attempt({ at: 58_000, process: 'connector-2' })];
      expect(judgeDeliveries(inFault, shared).violations).toEqual([]);
      const outside = [running, attempt({ at: 20_000 }), attempt({ at: 28_000, process: 'connector-2' })];
      expect(judgeDeliveries(outside).violations).toEqual([]);
      expect(judgeDeliveries(outside, shared).violations).toHaveLength(1);
    });
  });

  it('takes two copies that came within one millisecond in the order they were forwarded', () => {
    const verdict = judgeDeliveries([
      attempt({ at: 100, ms: 30 }),
      attempt({ at: 100, ms: 32, status: 200, outcome: 'replayed' }),
    ]);
    expect(verdict.violations).toEqual([]);
    expect(verdict.counts.inFlightDuplicates).toEqual({ sent: 1, taken: 0, answeredBeforeFirst2xx: 0 });
  });

  it('makes a duplicate taken while the first attempt was pending at the same process a violation', () => {
    const verdict = judgeDeliveries([attempt({ at: 0, ms: 50 }), attempt({ at: 10, ms: 50 })]);
    expect(verdict.counts.inFlightDuplicates).toMatchObject({ sent: 1, taken: 1 });
    expect(verdict.violations.join()).toMatch(/while .* was pending/);
  });

  it('accepts a duplicate that waited for the pending first attempt and was answered replayed', () => {
    const verdict = judgeDeliveries([
      attempt({ at: 0, ms: 50 }),
      attempt({ at: 10, ms: 45, status: 200, outcome: 'replayed' }),
    ]);
    expect(verdict.violations).toEqual([]);
    expect(verdict.counts.inFlightDuplicates).toMatchObject({ sent: 1, taken: 0, answeredBeforeFirst2xx: 0 });
  });

  it('makes "replayed" from a process that never took the delivery a violation (its first attempt failed)', () => {
    const verdict = judgeDeliveries([
      attempt({ at: 0, ms: 5000, status: 503, outcome: 'unavailable' }),
      attempt({ at: 10, ms: 20, status: 200, outcome: 'replayed' }),
    ]);
    expect(verdict.counts.inFlightDuplicates.answeredBeforeFirst2xx).toBe(1);
    expect(verdict.violations.join()).toMatch(/answered replayed by a process that never took the delivery/);
  });

  it('takes "replayed" from a process an earlier attempt went to unanswered (SIGSTOP\'d) for no violation', () => {
    const verdict = judgeDeliveries([
      attempt({ at: 0, ms: 8000, status: 504, outcome: null, process: null, forwardedTo: 'connector-6' }),
      attempt({ at: 5000, ms: 6000, process: 'connector-6', status: 200, outcome: 'replayed' }),
      attempt({ at: 10_000, process: 'connector-8' }),
    ]);
    expect(verdict.violations).toEqual([]);
  });

  it("counts the sender's answers by status, a retry after a 502 taken being no replay", () => {
    const verdict = judgeDeliveries([
      attempt({ at: 0, status: 502, outcome: null, process: null }),
      attempt({ at: 300, process: 'connector-2' }),
    ]);
    expect(verdict.counts.senderStatuses).toEqual({ '202': 1, '502': 1 });
    expect(verdict.violations).toEqual([]);
    expect(verdict.counts.replays).toMatchObject({ sameProcess: 0, otherProcess: 0 });
  });
});
