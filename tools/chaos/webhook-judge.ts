/**
 * The chaos run's rules over the webhook deliveries the ingress saw (webhook-ingress.ts): pure functions over
 * plain data, unit-tested (test/unit/tools/chaos/webhook-judge.test.ts). The driver judges each request by
 * itself: it holds the secret, so it knows whether a request was genuinely signed (webhook-signing.ts), and it
 * saw every earlier answer, so it knows whether the delivery id had been taken (202) before, and by which
 * connector process.
 *
 * Violations:
 * - a forged request (its signature does not verify with the run's secret: the sandbox's `badSignature`
 *   first attempts, its `reidentify` resends under a fresh id, the driver's forged floods) answered 2xx;
 * - a delivery id taken (202) twice by one process: a replay, or a duplicate sent while the first attempt was
 *   pending, nudged again;
 * - a delivery id answered 200 `replayed` by a process that never took it (202): the duplicate of a first
 *   attempt whose nudge then failed was told "taken", and nobody nudges. An attempt forwarded to the process and
 *   never answered (the ingress gave up after its timeout: a SIGSTOP'd process) may have been taken once the
 *   process woke, its 202 written to a closed connection: such a process's "replayed" for that id is no
 *   violation. In distributed mode neither is a "replayed" after an attempt of the id reached another
 *   instance: that instance's nudge, durable even when its answer was a 503 or lost, shared the key.
 *
 * - distributed mode (`SharedReplayRule`): a delivery id taken (202) by another instance more than `boundMs`
 *   after one took it first. Every instance's replay window holds the keys the others took, read from the nudge
 *   topic milliseconds after their 202; judged only where that reading is sure to have happened: the instance
 *   had answered its first request `READER_SETTLED_MS` before the original was taken (its nudge reader had
 *   joined), and the original was taken outside the fault windows (a broker outage or a restart may hold the
 *   reader back).
 *
 * Counted, not a violation: any other genuine delivery id taken by a process other than the one that took it
 * first: within the bound (the original's nudge not read yet), in single mode (a standby that took over has no
 * nudge topic to learn from), by a process started since, or after an original taken in a fault window. Its
 * worst effect is one poll brought forward per process.
 */

/** Who sent a request: the sandbox (the API's sender) or the driver playing an attacker. */
export type AttemptOrigin = 'sender' | 'forged-flood' | 'replay-flood';

/** One request through the ingress, and its answer. */
export interface DeliveryAttempt {
  origin: AttemptOrigin;
  /** When the ingress received it and answered it (epoch ms, the driver's clock). */
  receivedAtMs: number;
  answeredAtMs: number;
  /** Its `webhook-id` header; null when it had none. */
  id: string | null;
  uid: string | null;
  locationUid: string | null;
  /** Whether its signature verifies with the run's secret (webhook-signing.ts validSignature). */
  signed: boolean;
  /** The connector process that answered it (its name); null when none answered. */
  process: string | null;
  /** The process the ingress forwarded it to (answered or not); null when none could be reached. */
  forwardedTo: string | null;
  /** The status answered to the sender: the receiver's, or 502 / 504 when no process answered. */
  status: number;
  /** The receiver's word (`{"status": …}` of its answer: accepted, replayed, bad_signature…); null: none. */
  outcome: string | null;
}

/** Distributed mode: how a replay taken by another instance is judged (the module comment). */
export interface SharedReplayRule {
  /** A replay reaching another instance later than this after the original's 202 must be refused. */
  boundMs: number;
  /** Whether the original was taken in a fault window, where the other instances' readers may lag. */
  excused: (takenAtMs: number) => boolean;
}

/** The bound of the shared replay window: a nudge is read by every instance within milliseconds. */
export const SHARED_REPLAY_BOUND_MS = 1_000;
/** How long before the original an instance must have answered a request to be judged: its reader joined. */
export const READER_SETTLED_MS = 10_000;

export interface DeliveryCounts {
  /** Requests by origin. */
  requests: Record<AttemptOrigin, number>;
  /** Answers to the sender's requests by status (`502` etc.). */
  senderStatuses: Record<string, number>;
  /** Forged requests (any origin): sent, refused (401), answered 2xx. */
  forged: { sent: number; refused: number; accepted: number };
  /**
   * Genuine requests of an id taken before: to the process that took it (refused, taken again), to another
   * (taken; of those, taken past the shared window's bound where it is judged: `SharedReplayRule`).
   */
  replays: {
    sameProcess: number;
    takenAgainSameProcess: number;
    otherProcess: number;
    takenByOther: number;
    takenByOtherLate: number;
  };
  /** Requests of an id received while an earlier attempt of it was pending at the same process. */
  inFlightDuplicates: { sent: number; answeredBeforeFirst2xx: number; taken: number };
  /** Distinct genuine delivery ids the sender sent, and those taken (202) at least once. */
  deliveryIds: number;
  deliveryIdsTaken: number;
}

export interface DeliveryVerdict {
  counts: DeliveryCounts;
  violations: string[];
}

const is2xx = (status: number): boolean => status >= 200 && status < 300;

/**
 * The rules of the module comment over every request the ingress saw; `shared`: distributed mode's rule for
 * replays taken by another instance (absent: single mode, only counted).
 */
export function judgeDeliveries(
  attempts: readonly DeliveryAttempt[],
  shared?: SharedReplayRule,
): DeliveryVerdict {
  const counts: DeliveryCounts = {
    requests: { sender: 0, 'forged-flood': 0, 'replay-flood': 0 },
    senderStatuses: {},
    forged: { sent: 0, refused: 0, accepted: 0 },
    replays: {
      sameProcess: 0,
      takenAgainSameProcess: 0,
      otherProcess: 0,
      takenByOther: 0,
      takenByOtherLate: 0,
    },
    inFlightDuplicates: { sent: 0, answeredBeforeFirst2xx: 0, taken: 0 },
    deliveryIds: 0,
    deliveryIdsTaken: 0,
  };
  const forgedSamples: string[] = [];
  const twiceSamples: string[] = [];
  const untakenSamples: string[] = [];
  const lateSamples: string[] = [];
  let takenTwice = 0;
  let replayedUntaken = 0;
  const ordered = [...attempts].sort((a, b) => a.receivedAtMs - b.receivedAtMs);
  /** The genuine attempts of each id at each process, in order of arrival. */
  const byIdAndProcess = new Map<string, DeliveryAttempt[]>();
  for (const a of ordered)
    if (a.signed && a.id !== null && a.process !== null) {
      const key = `${a.id}\u0000${a.process}`;
      byIdAndProcess.set(key, [...(byIdAndProcess.get(key) ?? []), a]);
    }
  /** Per id, the processes an attempt of it was forwarded to that never answered it (they may have taken it). */
  const maybeTaken = new Map<string, Set<string>>();
  for (const a of ordered)
    if (a.signed && a.id !== null && a.process === null && a.forwardedTo !== null)
      maybeTaken.set(a.id, (maybeTaken.get(a.id) ?? new Set()).add(a.forwardedTo));
  /** id -> process -> its attempt answered the id's first 202 there. */
  const takenBy = new Map<string, Map<string, DeliveryAttempt>>();
  for (const list of byIdAndProcess.values())
    for (const a of list)
      if (a.status === 202 && a.id !== null && a.process !== null) {
        const byProcess = takenBy.get(a.id) ?? new Map<string, DeliveryAttempt>();
        const first = byProcess.get(a.process);
        if (first === undefined || a.answeredAtMs < first.answeredAtMs) byProcess.set(a.process, a);
        takenBy.set(a.id, byProcess);
      }
  /** Per id, the processes an attempt of it was forwarded to, and when it arrived: each may have shared its key. */
  const reached = new Map<string, { process: string; atMs: number }[]>();
  for (const a of ordered)
    if (a.signed && a.id !== null && a.forwardedTo !== null)
      reached.set(a.id, [...(reached.get(a.id) ?? []), { process: a.forwardedTo, atMs: a.receivedAtMs }]);
  /** Each process's first answer: it runs, its nudge reader started before it. */
  const firstAnswer = new Map<string, number>();
  for (const a of attempts)
    if (a.process !== null)
      firstAnswer.set(a.process, Math.min(firstAnswer.get(a.process) ?? Infinity, a.answeredAtMs));
  const senderIds = new Set<string>();
  for (const a of ordered) {
    counts.requests[a.origin]++;
    if (a.origin === 'sender') {
      counts.senderStatuses[String(a.status)] = (counts.senderStatuses[String(a.status)] ?? 0) + 1;
      if (a.id !== null && a.signed) senderIds.add(a.id);
    }
    if (!a.signed) {
      counts.forged.sent++;
      if (a.status === 401) counts.forged.refused++;
      if (is2xx(a.status)) {
        counts.forged.accepted++;
        if (forgedSamples.length < 3) forgedSamples.push(describe(a));
      }
      continue;
    }
    if (a.id === null || a.process === null) continue;
    const byProcess = takenBy.get(a.id);
    const taker = byProcess?.get(a.process);
    // Taken before it came: another attempt's 202 answered no later than it arrived (an answer may come
    // within the millisecond its request did, so an attempt is never its own replay).
    const tookBefore = (t: DeliveryAttempt): boolean => t !== a && t.answeredAtMs <= a.receivedAtMs;
    const elsewhere = [...(byProcess ?? [])]
      .filter(([p, t]) => p !== a.process && tookBefore(t))
      .map(([, t]) => t.answeredAtMs);
    const tookElsewhere = elsewhere.length > 0;
    if (taker !== undefined && tookBefore(taker)) {
      counts.replays.sameProcess++;
      if (a.status === 202) {
        counts.replays.takenAgainSameProcess++;
        takenTwice++;
        if (twiceSamples.length < 3) twiceSamples.push(describe(a));
      }
    } else if (tookElsewhere) {
      counts.replays.otherProcess++;
      if (a.status === 202) {
        counts.replays.takenByOther++;
        const originalAtMs = Math.min(...elsewhere);
        const settled = (firstAnswer.get(a.process) ?? Infinity) <= originalAtMs - READER_SETTLED_MS;
        if (
          shared !== undefined &&
          a.receivedAtMs - originalAtMs > shared.boundMs &&
          settled &&
          !shared.excused(originalAtMs)
        ) {
          counts.replays.takenByOtherLate++;
          if (lateSamples.length < 3)
            lateSamples.push(`${describe(a)} ${a.receivedAtMs - originalAtMs} ms after another took it`);
        }
      }
    }
    // A duplicate in flight: an earlier attempt of the id at the same process still unanswered when it came.
    // Earlier in arrival order (two copies sent at once may come within one millisecond: the one forwarded
    // first is the first attempt).
    const sameProcess = byIdAndProcess.get(`${a.id}\u0000${a.process}`) ?? [];
    const first = sameProcess.slice(0, sameProcess.indexOf(a)).find((b) => b.answeredAtMs > a.receivedAtMs);
    if (first !== undefined) {
      counts.inFlightDuplicates.sent++;
      if (is2xx(a.status) && !is2xx(first.status)) counts.inFlightDuplicates.answeredBeforeFirst2xx++;
      if (a.status === 202) counts.inFlightDuplicates.taken++;
      if (a.status === 202 && first.status === 202) {
        takenTwice++;
        if (twiceSamples.length < 3) twiceSamples.push(`${describe(a)} while ${describe(first)} was pending`);
      }
    }
    // "replayed" from a process that never took the id: a pending first attempt that then failed. In
    // distributed mode, a key shared by another instance an attempt reached before this one was answered is no
    // such case (a slow process checks its window when it gets to the request, not when the request came).
    const sharedByAnother =
      shared !== undefined &&
      (reached.get(a.id) ?? []).some((r) => r.process !== a.process && r.atMs <= a.answeredAtMs);
    if (
      a.outcome === 'replayed' &&
      taker === undefined &&
      !maybeTaken.get(a.id)?.has(a.process) &&
      !sharedByAnother
    ) {
      replayedUntaken++;
      if (untakenSamples.length < 3) untakenSamples.push(describe(a));
    }
  }
  counts.deliveryIds = senderIds.size;
  counts.deliveryIdsTaken = [...senderIds].filter((id) => takenBy.has(id)).length;
  const violations: string[] = [];
  if (counts.forged.accepted > 0)
    violations.push(
      `webhooks: ${counts.forged.accepted} forged request(s) answered 2xx (e.g. ${forgedSamples.join('; ')})`,
    );
  if (takenTwice > 0)
    violations.push(
      `webhooks: ${takenTwice} request(s) of a delivery id taken (202) again by the process that had taken or was taking it (e.g. ${twiceSamples.join('; ')})`,
    );
  if (replayedUntaken > 0)
    violations.push(
      `webhooks: ${replayedUntaken} request(s) answered replayed by a process that never took the delivery (e.g. ${untakenSamples.join('; ')})`,
    );
  if (counts.replays.takenByOtherLate > 0)
    violations.push(
      `webhooks: ${counts.replays.takenByOtherLate} replay(s) of a delivery another instance took answered 202 more than ${(shared?.boundMs ?? 0) / 1000} s after it was taken (the replay window shared over the nudge topic; e.g. ${lateSamples.join('; ')})`,
    );
  return { counts, violations };
}

function describe(a: DeliveryAttempt): string {
  return `${a.origin} ${a.id ?? '(no id)'} to ${a.process ?? 'no process'}: ${a.status}${a.outcome === null ? '' : ` ${a.outcome}`}`;
}
