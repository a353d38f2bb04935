/**
 * The chaos suite's freshness rule: the promise users buy the connector for ("a change made now is in Kafka
 * within one poll interval") held under every fault. Pure functions over plain data, unit-tested
 * (test/unit/tools/chaos-freshness.test.ts); the run (run.ts) gathers the data and keeps it (freshness.json,
 * judged again offline by rejudge.ts), the report prints the table.
 *
 * A change is a version the driver made the sandbox hold (live-changes.ts): its uid, its updatedAt, and when
 * the driver asked for it (`madeAtMs`, the driver's clock: the sandbox clock may have been moved on by a fault,
 * so its updatedAt is not a wall time). It is in Kafka once a committed record of its uid carries that version
 * or a newer one (a change superseded before its poll is in Kafka with the version that superseded it); its
 * time there is that record's Kafka timestamp (the connector's producer stamps it at the send inside the
 * transaction, a few milliseconds before the commit), read by the witness.
 *
 * Each fault owns the changes made from its start to the next fault's start (the last one: to the end of the
 * live changes). A change waits fairly until its own fault's deadline (`deadlineOf`)
 *
 *   max(made, fault end + the fault's recovery, fault start + its handover) + its own allowance + 2 × EI
 *
 * where the recovery is the run's (the next page committed after the fault's end), the handover distributed
 * mode's (ownership whole again), the allowance what the fault's kind needs by configuration to notice its own
 * end (`ownRecoveryAllowanceMs`), and EI the fair effective interval (`fairIntervalMs`): the configured
 * interval, or the longer one the API's budget in the window implies. The connector's own gauge is reported
 * beside it. Two faults beside its own may hold it longer, each by its own deadline for the change
 * (`deadlineAcross`): a later fault that starts before the change's own deadline (a change made just before a
 * quota hold waits for the hold too), and an earlier fault whose disruption (to its recovery, handover and
 * allowance: `disruptedUntil`) still runs when the change is made. One step only: a deadline a fault pushed
 * on, or an earlier fault's, does not push on again. The chaos driver starts each fault as soon as the previous
 * one has recovered (on the recorded short runs, 0.0-0.2 s after), so there is no calm between faults: any
 * rule that chains them (a later fault pushing a pushed deadline, or a budget of calm time between faults)
 * lets a change made as the first fault begins wait until the chain ends, about 250 s (single mode) and 300 s
 * (distributed) there, where one step allows 12 s and 47 s: the rule would catch nothing. A change caught by a
 * chain of faults is judged late when the connector was slow between them: slowness it can fix.
 * A change still waiting past its deadline is late, and a late change fails a run that holds freshness.
 */

/** One version the driver made the sandbox hold during the fault phase. */
export interface Change {
  uid: string;
  locationUid: string;
  updatedAtMs: number;
  /** When the driver asked the sandbox for it (epoch ms, the driver's clock). */
  madeAtMs: number;
}

/** Committed records per uid: the version each carries and its Kafka timestamp, to find a change's first. */
export class Publications {
  private readonly byUid = new Map<string, { updatedAtMs: number; atMs: number }[]>();
  /** Every record's timestamp, ascending (firstAfter); dropped by add. */
  private allTimes: number[] | null = null;

  /** A committed record of `uid` at version `updatedAtMs`, stamped `atMs` in Kafka (null: no timestamp). */
  add(uid: string, updatedAtMs: number, atMs: number | null): void {
    if (atMs === null || !Number.isFinite(atMs) || !Number.isFinite(updatedAtMs)) return;
    const list = this.byUid.get(uid) ?? [];
    list.push({ updatedAtMs, atMs });
    this.byUid.set(uid, list);
    this.allTimes = null;
  }

  /**
   * The Kafka timestamp of the first committed record stamped after `afterMs` (any uid); null: none. Read from
   * what the witness saw committed, so a transaction a fault aborted never counts as progress.
   */
  firstAfter(afterMs: number): number | null {
    this.allTimes ??= [...this.byUid.values()]
      .flatMap((list) => list.map((p) => p.atMs))
      .sort((a, b) => a - b);
    const times = this.allTimes;
    let low = 0;
    let high = times.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((times[mid] ?? Infinity) > afterMs) high = mid;
      else low = mid + 1;
    }
    return times[low] ?? null;
  }

  /** When the change of `uid` at `updatedAtMs` was first in Kafka: the earliest record at it or newer; null: never. */
  firstCovering(uid: string, updatedAtMs: number): number | null {
    const list = this.byUid.get(uid);
    if (list === undefined) return null;
    let first: number | null = null;
    for (const p of list)
      if (p.updatedAtMs >= updatedAtMs && (first === null || p.atMs < first)) first = p.atMs;
    return first;
  }
}

/** A fault as the run saw it: when it ran, how it recovered, and the effective interval around it. */
export interface FaultWindow {
  kind: string;
  /** Fault start and end (epoch ms), and the start of the next fault or the end of the live changes. */
  startMs: number;
  endMs: number;
  untilMs: number;
  /** The run's recovery (from the end to the next committed page); null: none within the cap. */
  recoveryMs: number | null;
  /** Distributed mode's handover (from the start to ownership whole); absent or null: not measured. */
  handoverMs?: number | null;
  /** What the kind needs by configuration to notice its own end (ownRecoveryAllowanceMs). */
  allowanceMs: number;
  /** The fair effective interval of the window (fairIntervalMs). */
  effectiveIntervalMs: number;
  /** The largest effective interval the connector's gauge reported in the window (null: never read), reported. */
  gaugeMaxMs: number | null;
}

/** The fault's figures: how long its changes waited, the bound, and the late ones. */
export interface FaultFreshness {
  kind: string;
  /** Seconds from the start of the fault phase, as the report prints faults. */
  atS: number;
  changes: number;
  /** Changes not in Kafka at all (the checker counts them lost; here they are late too). */
  unpublished: number;
  p50Ms: number | null;
  p99Ms: number | null;
  maxMs: number | null;
  /** The largest wait the rule allowed one of its changes, for the report. */
  boundMs: number | null;
  effectiveIntervalMs: number;
  gaugeMaxMs: number | null;
  late: number;
  samples: string[];
}

/** The recovery assumed when the run saw none within its cap (the cap: tools/chaos/run.ts RECOVERY_CAP_MS). */
export const NO_RECOVERY_MS = 240_000;

/**
 * How the connector's learned rate probes for the end of a limit (docs/performance.md, "Rate limits"): slow
 * start again this long after the last refusal, then grow by this fraction a second. Its own constants, not
 * configuration; stated here, not imported, since the suite shares no code with the connector.
 */
export const LEARNED_RATE_PROBE = Object.freeze({ slowStartAfterMs: 20_000, slowStartGrowth: 0.15 });

/**
 * What a fault's kind needs, by the configuration the chaos run sets, to notice its own end beyond the run's
 * recovery (which sees the first page committed anywhere, often another location's):
 * - api-grant-quota-spent: the parked grant is asked again only every api.retry.maxRetryAfterMs;
 * - refresh-kill: the lost grant waits for the operator's `auth login` (once per 30 s per grant) and then for
 *   the stopped locations' retry (poll.stoppedRetry.initialDelayMs);
 * - api-limit-below-live-demand: a hidden limit's end shows in nothing but answers that stop being refused, so the
 *   learned rate (src/api/rate-limit/aimd.ts) finds it by probing: slow start again `slowStartAfterMs` after the
 *   last refusal, then a climb at `slowStartGrowth` a second from about the limit to the live demand (twice the
 *   limit in this fault; a factor of 3 allowed, for the rate the refusals left under the limit). Probing sooner
 *   or steeper finds a lifted limit sooner but costs refusals at a steady one, beyond the 2 % the rate-limit
 *   bench holds at 5 requests/s (docs/performance.md);
 * every other kind: nothing.
 */
export function ownRecoveryAllowanceMs(
  kind: string,
  settings: {
    maxRetryAfterMs: number;
    stoppedRetryInitialDelayMs: number;
    slowStartAfterMs: number;
    slowStartGrowth: number;
  },
): number {
  if (kind === 'api-grant-quota-spent') return settings.maxRetryAfterMs;
  if (kind === 'refresh-kill') return 30_000 + settings.stoppedRetryInitialDelayMs;
  if (kind === 'api-limit-below-live-demand')
    return settings.slowStartAfterMs + Math.ceil((1000 * Math.log(3)) / settings.slowStartGrowth);
  return 0;
}

/**
 * The fair effective interval of a window: the configured interval, or the interval the API's budget in the
 * window implies when it is longer, `budgetIntervalMs` (locations ÷ (the rate the API allows × the live share),
 * see docs/chaos.md). No connector can poll faster than its budget allows, whatever its gauge says (under a
 * limit below live demand it may keep reporting the configured interval while its polls queue); and a stretch
 * beyond the budget is the connector's own doing (one slow location stretching every other, issue 39), which
 * is what the rule must catch, not excuse. The gauge's largest value is reported beside it (FaultWindow).
 */
export function fairIntervalMs(configuredMs: number, budgetIntervalMs: number): number {
  return Math.max(configuredMs, budgetIntervalMs);
}

/** When `window`'s stack is whole again: the later of its recovery and its handover. */
function recoveredAt(window: FaultWindow): number {
  const recovered = window.endMs + (window.recoveryMs ?? NO_RECOVERY_MS);
  const handover = window.handoverMs ?? null;
  return Math.max(recovered, handover === null ? window.startMs : window.startMs + handover);
}

/** The latest time `change` may reach Kafka under `window` alone (the module comment's rule). */
export function deadlineOf(change: Pick<Change, 'madeAtMs'>, window: FaultWindow): number {
  return Math.max(change.madeAtMs, recoveredAt(window)) + window.allowanceMs + 2 * window.effectiveIntervalMs;
}

/**
 * When `window`'s disruption ends: its recovery or handover, whichever is later, plus its kind's allowance. A
 * change made before then in a later fault's window is held by this fault too (deadlineAcross).
 */
export function disruptedUntil(window: FaultWindow): number {
  return recoveredAt(window) + window.allowanceMs;
}

/**
 * The latest time `change`, made in `windows[own]`, may reach Kafka: its own window's deadline, a later
 * fault's when that fault starts before the change's own deadline (a change made just before a quota hold or a
 * broker kill, still fairly waiting when it begins, waits for that fault's recovery too, as a change made
 * during it does), and an earlier fault's when that fault's disruption still runs at the change's making,
 * whichever is latest. One step only: deadlines pushed on by a fault, and an earlier fault's, do not push on
 * again, or back-to-back faults would excuse any wait (the module comment's figures). Windows in start order.
 */
export function deadlineAcross(
  change: Pick<Change, 'madeAtMs'>,
  windows: readonly FaultWindow[],
  own: number,
): number {
  const first = windows[own];
  if (first === undefined) throw new RangeError(`no fault window ${own}`);
  const ownDeadline = deadlineOf(change, first);
  let deadline = ownDeadline;
  for (const later of windows.slice(own + 1)) {
    if (later.startMs > ownDeadline) break;
    deadline = Math.max(deadline, deadlineOf(change, later));
  }
  for (const earlier of windows.slice(0, own))
    if (disruptedUntil(earlier) > change.madeAtMs) deadline = Math.max(deadline, deadlineOf(change, earlier));
  return deadline;
}

/**
 * A fault's recovery for the freshness rule: the run's (null: none within its cap) or, when later, the time
 * from `endMs` to the first record committed after it.
 */
export function committedRecoveryMs(
  runRecoveryMs: number | null,
  endMs: number,
  publications: Pick<Publications, 'firstAfter'>,
): number | null {
  if (runRecoveryMs === null) return null;
  const first = publications.firstAfter(endMs);
  return first === null ? runRecoveryMs : Math.max(runRecoveryMs, first - endMs);
}

/** The value at quantile `q` (nearest rank) of ascending `sorted`; null when empty. */
export function quantile(sorted: readonly number[], q: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length)));
  return sorted[rank - 1] ?? null;
}

/**
 * Per fault (in the order given), the waits of the changes made in its window: from each change's madeAt to
 * its first record in Kafka, their p50, p99 and max, and the changes later than the rule allows (with up to
 * five samples). `phaseStartMs`: the start of the fault phase, for the report's times.
 */
export function judgeFreshness(
  windows: readonly FaultWindow[],
  changes: readonly Change[],
  publications: Publications,
  phaseStartMs: number,
): FaultFreshness[] {
  return windows.map((window, index) => {
    const mine = changes.filter((c) => c.madeAtMs >= window.startMs && c.madeAtMs < window.untilMs);
    const waits: number[] = [];
    const out: FaultFreshness = {
      kind: window.kind,
      atS: Math.round((window.startMs - phaseStartMs) / 1000),
      changes: mine.length,
      unpublished: 0,
      p50Ms: null,
      p99Ms: null,
      maxMs: null,
      boundMs: null,
      effectiveIntervalMs: window.effectiveIntervalMs,
      gaugeMaxMs: window.gaugeMaxMs,
      late: 0,
      samples: [],
    };
    for (const change of mine) {
      const deadline = deadlineAcross(change, windows, index);
      out.boundMs = Math.max(out.boundMs ?? 0, deadline - change.madeAtMs);
      const at = publications.firstCovering(change.uid, change.updatedAtMs);
      if (at === null) {
        out.unpublished++;
        out.late++;
        if (out.samples.length < 5)
          out.samples.push(`${change.uid} (location ${change.locationUid}): never in Kafka`);
        continue;
      }
      const wait = Math.max(0, at - change.madeAtMs);
      waits.push(wait);
      if (at > deadline) {
        out.late++;
        if (out.samples.length < 5)
          out.samples.push(
            `${change.uid} (location ${change.locationUid}) made at +${((change.madeAtMs - phaseStartMs) / 1000).toFixed(1)} s: in Kafka after ${(wait / 1000).toFixed(1)} s, allowed ${((deadline - change.madeAtMs) / 1000).toFixed(1)} s`,
          );
      }
    }
    waits.sort((a, b) => a - b);
    out.p50Ms = quantile(waits, 0.5);
    out.p99Ms = quantile(waits, 0.99);
    out.maxMs = waits.at(-1) ?? null;
    return out;
  });
}

/** The violation of one fault's late changes; null when none was late. */
export function freshnessViolation(f: FaultFreshness): string | null {
  if (f.late === 0) return null;
  return `freshness: ${f.kind} at +${f.atS} s: ${f.late} of ${f.changes} changes waited past the fault's recovery plus two effective intervals (${(f.effectiveIntervalMs / 1000).toFixed(1)} s each; e.g. ${f.samples.join('; ')})`;
}

/**
 * The judge's inputs as a run folder keeps them (freshness.json, written by run.ts, read by rejudge.ts): the
 * windows as judged (recoveries already the committed ones), every change with the Kafka timestamp of its
 * first covering record (null: never in Kafka), and the start of the fault phase.
 */
export interface FreshnessRecord {
  phaseStartMs: number;
  windows: FaultWindow[];
  changes: (Change & { inKafkaAtMs: number | null })[];
}

/** The record of a run's freshness inputs (`publications`: what the witness saw committed). */
export function freshnessRecord(
  windows: readonly FaultWindow[],
  changes: readonly Change[],
  publications: Pick<Publications, 'firstCovering'>,
  phaseStartMs: number,
): FreshnessRecord {
  return {
    phaseStartMs,
    windows: [...windows],
    changes: changes.map((c) => ({
      uid: c.uid,
      locationUid: c.locationUid,
      updatedAtMs: c.updatedAtMs,
      madeAtMs: c.madeAtMs,
      inKafkaAtMs: publications.firstCovering(c.uid, c.updatedAtMs),
    })),
  };
}

/**
 * `judgeFreshness` over a record: the same figures as over the run's publications, since a change's first
 * covering record is never later than that of a newer version of its uid.
 */
export function judgeRecord(record: FreshnessRecord): FaultFreshness[] {
  const publications = new Publications();
  for (const c of record.changes) publications.add(c.uid, c.updatedAtMs, c.inKafkaAtMs);
  return judgeFreshness(record.windows, record.changes, publications, record.phaseStartMs);
}
