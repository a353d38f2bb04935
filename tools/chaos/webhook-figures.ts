/**
 * The webhook part of a run's findings, from what the ingress saw (webhook-ingress.ts), the live changes and
 * the witness' publications: the judge's verdict on every request (webhook-judge.ts) and each change's route
 * to Kafka (webhook-attribution.ts). `announcedChanges` (pure, unit-tested) ties each change to the deliveries
 * that announced it.
 */
import type { Change, Publications } from './freshness.js';
import { NO_RECOVERY_MS } from './freshness.js';
import type { FaultOutcome } from './summary.js';
import {
  attribute,
  attributeAll,
  outsideFaults,
  GOAL_P99_MS,
  NUDGE_BOUND_MS,
  RECONCILE_INTERVAL_MS,
  type AnnouncedChange,
  type Attribution,
  type Route,
  type Span,
} from './webhook-attribution.js';
import {
  judgeDeliveries,
  SHARED_REPLAY_BOUND_MS,
  type DeliveryAttempt,
  type DeliveryCounts,
} from './webhook-judge.js';

export interface WebhookFigures {
  /** Distributed mode: the bound past which a replay taken by another instance is a violation; null: single. */
  sharedReplayBoundMs: number | null;
  reconcileIntervalMs: number;
  nudgeBoundMs: number;
  goalP99Ms: number;
  counts: DeliveryCounts;
  attribution: Attribution;
  violations: string[];
  /** The delivered changes' p99 outside the fault windows over the goal, as a late-changes line; null: within. */
  late: string | null;
}

/**
 * Each change with when a delivery announcing it was first taken (202): a genuine sender delivery of its uid
 * received after the change was made and before the uid's next change was made announces it.
 */
export function announcedChanges(
  changes: readonly Change[],
  attempts: readonly DeliveryAttempt[],
  publications: Pick<Publications, 'firstCovering'>,
): AnnouncedChange[] {
  const byUid = new Map<string, Change[]>();
  for (const c of changes) byUid.set(c.uid, [...(byUid.get(c.uid) ?? []), c]);
  for (const list of byUid.values()) list.sort((a, b) => a.madeAtMs - b.madeAtMs);
  const taken = new Map<Change, number>();
  for (const a of attempts) {
    if (a.origin !== 'sender' || !a.signed || a.status !== 202 || a.uid === null) continue;
    const list = byUid.get(a.uid) ?? [];
    let announced: Change | undefined;
    for (const c of list) if (c.madeAtMs <= a.receivedAtMs) announced = c;
    if (announced !== undefined)
      taken.set(announced, Math.min(taken.get(announced) ?? Infinity, a.answeredAtMs));
  }
  return changes.map((c) => ({
    uid: c.uid,
    locationUid: c.locationUid,
    madeAtMs: c.madeAtMs,
    takenAtMs: taken.get(c) ?? null,
    publishedAtMs: publications.firstCovering(c.uid, c.updatedAtMs),
  }));
}

/**
 * The spans faults were at work: from the start to the end plus the recovery or, distributed mode, to ownership
 * whole again when later, plus what the fault's kind needs to notice its own end, `allowanceMs(kind)` (as the
 * freshness rule's disruption, freshness.ts `disruptedUntil`: a parked grant asked again, a lost grant logged in
 * again, a hidden limit's end found by the learned rate's probe); and the start-up before the quiet baseline
 * that precedes the first fault (schedule.ts quietBaselineMs).
 */
export function faultSpans(
  faults: readonly FaultOutcome[],
  quietFromMs: number,
  allowanceMs: KindAllowance = noAllowance,
): Span[] {
  return [
    { fromMs: 0, untilMs: quietFromMs },
    ...faults.map((f) => {
      const recovered = (f.endMs ?? f.startMs) + (f.recoveryMs ?? NO_RECOVERY_MS);
      const handedOver =
        f.handoverMs === undefined ? f.startMs : f.startMs + (f.handoverMs ?? NO_RECOVERY_MS);
      return { fromMs: f.startMs, untilMs: Math.max(recovered, handedOver) + allowanceMs(f.kind) };
    }),
  ];
}

/** What a fault's kind needs to notice its own end (freshness.ts ownRecoveryAllowanceMs, by the run's settings). */
export type KindAllowance = (kind: string) => number;

const noAllowance: KindAllowance = () => 0;

/** Each change with its route and whether it was made outside the fault spans: the run folder's record. */
export function routedChanges(
  changes: readonly Change[],
  attempts: readonly DeliveryAttempt[],
  publications: Pick<Publications, 'firstCovering'>,
  faults: readonly FaultOutcome[],
  quietFromMs: number,
  allowanceMs: KindAllowance = noAllowance,
): (AnnouncedChange & { route: Route; outside: boolean })[] {
  const announced = announcedChanges(changes, attempts, publications);
  const spans = faultSpans(faults, quietFromMs, allowanceMs);
  const takes = new Map<string, number[]>();
  for (const c of announced)
    if (c.takenAtMs !== null) takes.set(c.locationUid, [...(takes.get(c.locationUid) ?? []), c.takenAtMs]);
  return announced.map((c) => ({
    ...c,
    route: attribute(c, takes.get(c.locationUid) ?? []),
    outside: outsideFaults(c.madeAtMs, spans),
  }));
}

export function webhookFigures(input: {
  attempts: readonly DeliveryAttempt[];
  changes: readonly Change[];
  publications: Pick<Publications, 'firstCovering'>;
  faults: readonly FaultOutcome[];
  /** When the quiet baseline began: changes made before it are the start-up's. */
  quietFromMs: number;
  /** Distributed mode: the instances share their replay windows over the nudge topic (webhook-judge.ts). */
  sharedReplayWindow: boolean;
  /** What each fault's kind needs to notice its own end, beyond its recovery (faultSpans); none when absent. */
  allowanceMs?: KindAllowance;
}): WebhookFigures {
  const spans = faultSpans(input.faults, input.quietFromMs, input.allowanceMs);
  const verdict = judgeDeliveries(
    input.attempts,
    input.sharedReplayWindow
      ? {
          boundMs: SHARED_REPLAY_BOUND_MS,
          excused: (takenAtMs) => spans.some((s) => takenAtMs >= s.fromMs && takenAtMs <= s.untilMs),
        }
      : undefined,
  );
  const attribution = attributeAll(
    announcedChanges(input.changes, input.attempts, input.publications),
    spans,
  );
  const p99 = attribution.deliveredOutside.p99Ms;
  return {
    sharedReplayBoundMs: input.sharedReplayWindow ? SHARED_REPLAY_BOUND_MS : null,
    reconcileIntervalMs: RECONCILE_INTERVAL_MS,
    nudgeBoundMs: NUDGE_BOUND_MS,
    goalP99Ms: GOAL_P99_MS,
    counts: verdict.counts,
    attribution,
    violations: verdict.violations,
    late:
      p99 !== null && p99 > GOAL_P99_MS
        ? `webhooks: delivered changes outside the fault windows p99 ${(p99 / 1000).toFixed(2)} s, over the goal of ${GOAL_P99_MS / 1000} s (${attribution.deliveredOutside.count} changes; by reconciliation e.g. ${attribution.samples.join('; ') || 'none'})`
        : null,
  };
}
