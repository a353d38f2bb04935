/**
 * How each live change reached Kafka with webhooks on: by the nudge of the delivery that announced it, or only
 * by a later poll. Pure functions over plain data, unit-tested (test/unit/tools/chaos/webhook-attribution.test.ts);
 * docs/chaos.md states the rule.
 *
 * The connector publishes nothing from a delivery: a delivery taken (202) makes its location's live poll due
 * now, and that poll lists every change of the location since its watermark. So a change is in Kafka by the
 * first live poll of its location that listed after it was made, whichever asked for that poll. The rule tells
 * them apart by time: the chaos config polls for reconciliation every `webhooks.reconcileIntervalMs` (12 s),
 * and a reconciliation poll of a location comes at least half an interval (6 s) after its last traversal,
 * while a nudged poll publishes within about a second. A change published within `NUDGE_BOUND_MS` of a
 * delivery of its location being taken came by that nudge; one published later than that after every such
 * delivery came by reconciliation (or a nudge that took longer than the bound, which a fault can cause: the
 * report's counts outside fault windows say which).
 *
 * Per change (`attribute`):
 * - `nudge`: a delivery announcing this very change was taken at t, and the change was in Kafka in [t, t + bound];
 * - `before-delivery`: in Kafka before any delivery announcing it was taken (a poll of its location found it first);
 * - `other-nudge`: in Kafka within the bound after a delivery of another change of its location was taken (after
 *   the change was made), its own delivery not taken or not in time: the nudge was another change's;
 * - `reconciliation`: in Kafka, and none of the above: a poll no nudge asked for in time (a scheduled
 *   reconciliation poll, a start-up round after a restart or takeover, or a nudge slower than the bound);
 * - `unpublished`: never in Kafka (the checker counts it lost).
 */

/** How long after a delivery was taken its nudged poll may take and still count as the nudge's. */
export const NUDGE_BOUND_MS = 3000;

/** webhooks.reconcileIntervalMs of the chaos config. */
export const RECONCILE_INTERVAL_MS = 12_000;

export type Route = 'nudge' | 'before-delivery' | 'other-nudge' | 'reconciliation' | 'unpublished';

export interface AnnouncedChange {
  uid: string;
  locationUid: string;
  /** When the driver asked the sandbox for it (epoch ms). */
  madeAtMs: number;
  /** When a delivery announcing this change was first taken (202); null: none was. */
  takenAtMs: number | null;
  /** When it was first in Kafka (its record's Kafka timestamp); null: never. */
  publishedAtMs: number | null;
}

/**
 * The route of `change` (the module comment's rule). `locationTakes`: when deliveries of its location (any of
 * its changes) were taken, ascending.
 */
export function attribute(
  change: AnnouncedChange,
  locationTakes: readonly number[],
  boundMs = NUDGE_BOUND_MS,
): Route {
  const published = change.publishedAtMs;
  if (published === null) return 'unpublished';
  if (change.takenAtMs !== null) {
    if (published < change.takenAtMs) return 'before-delivery';
    if (published <= change.takenAtMs + boundMs) return 'nudge';
  }
  const byOther = locationTakes.some(
    (t) => t >= change.madeAtMs && t !== change.takenAtMs && published >= t && published <= t + boundMs,
  );
  return byOther ? 'other-nudge' : 'reconciliation';
}

/** A span of time a fault was at work: from its start to its end plus its recovery (epoch ms). */
export interface Span {
  fromMs: number;
  untilMs: number;
}

/**
 * Whether a change made at `madeAtMs` is outside every fault span: neither made during one nor made less
 * than the bound before one began (its nudge would have been at work when the fault began).
 */
export function outsideFaults(madeAtMs: number, spans: readonly Span[], boundMs = NUDGE_BOUND_MS): boolean {
  return spans.every((s) => madeAtMs + boundMs < s.fromMs || madeAtMs > s.untilMs);
}

export interface RouteCounts {
  /** Changes a taken delivery announced, by route. */
  announced: Record<Route, number>;
  /** Changes no taken delivery announced (dropped, failed, never sent), by route. */
  unannounced: Record<Route, number>;
}

export interface Attribution {
  all: RouteCounts;
  /** The same for the changes made outside every fault span. */
  outside: RouteCounts;
  /**
   * From making to Kafka, for announced changes made outside every fault span: p50, p99, max (ms) and how many;
   * the figure held to the goal (GOAL_P99_MS).
   */
  deliveredOutside: { count: number; p50Ms: number | null; p99Ms: number | null; maxMs: number | null };
  /** Up to five announced changes outside the fault spans that came by reconciliation, for the report. */
  samples: string[];
}

/** Issue 40's goal for delivered changes outside the fault windows. */
export const GOAL_P99_MS = 2000;

const emptyRoutes = (): Record<Route, number> => ({
  nudge: 0,
  'before-delivery': 0,
  'other-nudge': 0,
  reconciliation: 0,
  unpublished: 0,
});

/** Every change's route, counted for all changes and for those outside the fault spans. */
export function attributeAll(
  changes: readonly AnnouncedChange[],
  spans: readonly Span[],
  boundMs = NUDGE_BOUND_MS,
): Attribution {
  const takes = new Map<string, number[]>();
  for (const c of changes)
    if (c.takenAtMs !== null) takes.set(c.locationUid, [...(takes.get(c.locationUid) ?? []), c.takenAtMs]);
  const all: RouteCounts = { announced: emptyRoutes(), unannounced: emptyRoutes() };
  const outside: RouteCounts = { announced: emptyRoutes(), unannounced: emptyRoutes() };
  const waits: number[] = [];
  const samples: string[] = [];
  for (const c of changes) {
    const route = attribute(c, takes.get(c.locationUid) ?? [], boundMs);
    const side = c.takenAtMs === null ? 'unannounced' : 'announced';
    all[side][route]++;
    if (!outsideFaults(c.madeAtMs, spans, boundMs)) continue;
    outside[side][route]++;
    if (side === 'announced' && c.publishedAtMs !== null)
      waits.push(Math.max(0, c.publishedAtMs - c.madeAtMs));
    if (side === 'announced' && route === 'reconciliation' && samples.length < 5)
      samples.push(
        `${c.uid} (location ${c.locationUid}): taken ${((c.takenAtMs ?? 0) - c.madeAtMs) / 1000} s after it was made, in Kafka after ${(((c.publishedAtMs ?? 0) - c.madeAtMs) / 1000).toFixed(1)} s`,
      );
  }
  waits.sort((a, b) => a - b);
  const at = (q: number): number | null =>
    waits.length === 0
      ? null
      : (waits[Math.min(waits.length, Math.max(1, Math.ceil(q * waits.length))) - 1] ?? null);
  return {
    all,
    outside,
    deliveredOutside: { count: waits.length, p50Ms: at(0.5), p99Ms: at(0.99), maxMs: waits.at(-1) ?? null },
    samples,
  };
}
