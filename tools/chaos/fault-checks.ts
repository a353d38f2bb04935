/**
 * The promises of the faults of issue 32 (a grant whose quota is spent, a hidden limit below the live demand),
 * judged from two readings of the offsets topic taken around the fault: pure functions over plain data, so that
 * they are unit-tested (test/unit/tools/chaos-fault-checks.test.ts). Nothing here imports the connector.
 */

/** One location's stored offset as the driver reads it from the offsets topic (its newest record). */
export interface OffsetView {
  /** Offset records of the location read so far: one more per committed page. */
  records: number;
  watermark: string | null;
  cursor: string | null;
  /** The history lane's position (its JSON), or null when the location has none (not split, or merged). */
  history: string | null;
}

export type OffsetReading = ReadonlyMap<string, OffsetView>;

/** The grant names of the chaos config: the locations are divided between them (sources[].grant). */
export const GRANTS = ['default', 'second'] as const;
export type GrantName = (typeof GRANTS)[number];

/**
 * The locations of each grant: the first half (rounded up) read with grant `default`, the rest with `second`,
 * in the sandbox's order of the locations.
 */
export function locationsByGrant(locations: readonly string[]): Record<GrantName, string[]> {
  const half = Math.ceil(locations.length / 2);
  return { default: locations.slice(0, half), second: locations.slice(half) };
}

/** Whether the location committed a page between the two readings. */
export function advanced(before: OffsetReading, after: OffsetReading, location: string): boolean {
  return (after.get(location)?.records ?? 0) > (before.get(location)?.records ?? 0);
}

/**
 * The locations among `locations` that had a live change at least `leadMs` before `until` (time enough for a
 * poll and its commit) and still committed no page between the readings: locations left stale. `changedAt`
 * holds each location's live changes (epoch ms), `from` when the first reading was taken.
 */
export function staleLocations(
  before: OffsetReading,
  after: OffsetReading,
  locations: readonly string[],
  changedAt: ReadonlyMap<string, readonly number[]>,
  window: { from: number; until: number; leadMs: number },
): string[] {
  return locations.filter((location) => {
    const changed = (changedAt.get(location) ?? []).some(
      (t) => t >= window.from && t <= window.until - window.leadMs,
    );
    return changed && !advanced(before, after, location);
  });
}

/**
 * Whether every location finished its first live traversal: it has an offset record with no cursor left (its
 * history lane, when split, may still be read in the background). Before that the connector is in its start-up
 * round, where every location's first poll competes with the nudged ones; the quiet baseline (run.ts) waits for
 * it, so that the delivered changes measured outside the fault windows are not the start-up's.
 */
export function firstTraversalsDone(reading: OffsetReading, locations: readonly string[]): boolean {
  return locations.every((location) => {
    const view = reading.get(location);
    return view !== undefined && view.records > 0 && view.cursor === null && view.watermark !== null;
  });
}

/** The history lanes open at the first reading, and which of them moved (or merged) by the second. */
export function historyProgress(
  before: OffsetReading,
  after: OffsetReading,
): { open: string[]; advanced: string[]; stuck: string[] } {
  const open = [...before].filter(([, view]) => view.history !== null).map(([location]) => location);
  const moved = open.filter((location) => after.get(location)?.history !== before.get(location)?.history);
  return { open, advanced: moved, stuck: open.filter((location) => !moved.includes(location)) };
}

/** History under a hidden limit below live demand: its lanes' progress and the starts its requests got. */
export interface HistoryUnderLimit {
  progress: { open: string[]; advanced: string[]; stuck: string[] };
  /** Request starts the rate limiters granted to history (backfill) during the window, all instances. */
  backfillStarts: number;
  /** All request starts granted during the window, all instances. */
  allStarts: number;
}

/**
 * Whether history was starved under the limit: a lane open at the start neither moved nor had any request
 * granted during the window. A lane may not finish a page in the window (a page of twenty calls costs about
 * twenty-one requests, more than history's share of a few requests per second gives it in a few seconds),
 * but its requests must keep being granted: the limiter owes history its share of the starts while it waits.
 */
export function historyStarved(history: HistoryUnderLimit): boolean {
  return history.progress.stuck.length > 0 && history.backfillStarts === 0;
}

/**
 * The live polls' share of the API budget: 1 − api.rateLimit.backfillShare (0.25 by default; nudgeShare only
 * counts with webhooks on, which the chaos config leaves off).
 */
export const LIVE_SHARE = 0.75;

/**
 * The hidden limit of the `api-limit-reset-forms` fault: above what live demand needs within live's share
 * (a listing per location per poll interval and a single-call request per live change), with a quarter to
 * spare, so that a change should wait about one interval, not the backfill (issue 39's 8 req/s case).
 */
export function limitAboveLiveDemand(
  locations: number,
  pollIntervalMs: number,
  changesPerSecond: number,
): number {
  return Math.ceil(((locations / (pollIntervalMs / 1000) + changesPerSecond) / LIVE_SHARE) * 1.25);
}

/**
 * The effective interval (ms) a request rate implies: each location listed once per interval with the live
 * share of `requestsPerSecond` (locations ÷ (rate × live share)); the freshness rule's budget bound.
 */
export function budgetIntervalMs(locations: number, requestsPerSecond: number): number {
  return (locations / (requestsPerSecond * LIVE_SHARE)) * 1000;
}

/**
 * The hidden limit of the `api-limit-below-live-demand` fault: half of what the live polls alone need (one
 * listing per location per poll interval), at least one request per second.
 */
export function limitBelowLiveDemand(locations: number, pollIntervalMs: number): number {
  return Math.max(1, Math.floor(locations / (pollIntervalMs / 1000) / 2));
}

/**
 * The grant names an instance's log says were lost (AUTH_GRANT_REVOKED lines), in order of first mention; a
 * line naming none counts as `default`.
 */
export function revokedGrants(log: string): string[] {
  const names: string[] = [];
  for (const line of log.split('\n')) {
    if (!line.includes('AUTH_GRANT_REVOKED')) continue;
    const name =
      /"grant":"([^"\\]+)"/.exec(line)?.[1] ?? /grant \\?"([^"\\]+)\\?"/.exec(line)?.[1] ?? 'default';
    if (!names.includes(name)) names.push(name);
  }
  return names;
}

/** What a single-mode SIGSTOP showed of the replacement started when the writer was paused. */
export interface PausedReplacement {
  /** From the pause to the first page committed after it; null: none within the cap. */
  tookOverMs: number | null;
  /** /status names the replacement the writer once the woken instance was stopped. */
  writer: boolean;
  /**
   * From the woken instance's stop to the next page committed (the replacement's: nothing else runs in single
   * mode then); null: none within the cap.
   */
  writesAfterMs: number | null;
}

/**
 * The promises a single-mode SIGSTOP broke (empty: none): the replacement committed pages while the writer was
 * paused, and once the woken one was stopped it is still the writer and still commits pages. The run keeps
 * making live changes all along, so a replacement that writes has pages to commit.
 */
export function pausedReplacementFailures(replacement: PausedReplacement): string[] {
  const failures: string[] = [];
  if (replacement.tookOverMs === null)
    failures.push('the replacement committed no page while the writer was paused');
  if (!replacement.writer)
    failures.push('the replacement is not the writer once the woken instance was stopped');
  if (replacement.writesAfterMs === null)
    failures.push('no page committed once the woken instance was stopped');
  return failures;
}
