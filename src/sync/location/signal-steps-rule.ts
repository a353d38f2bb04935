/**
 * What a signal accepted for a location does to its offset: the one rule, pure over plain data. The signal steps
 * (signal-steps.ts) ask it at the start of each page for the location's pending signals, in the order they were
 * sent, and the orchestrator (location-sync.ts) commits what it answers before the page (an offset with no
 * records, the `done` outcome in the same commit when the signal is then complete).
 *
 * - `reset {to}`: the offset starts over at `to` (null: the location's start), its lanes and boundary dropped;
 *   complete with that commit.
 * - `backfill {since, until}`: the location reads [since, until) again as a history lane beside its live one
 *   (lanes.ts), whatever it published before: `since` null is the location's start, `until` null the moment the
 *   owner accepted the signal. The history lane is tagged with the signal: its records carry a header naming
 *   it, and the commit that merges the lane completes it. A location already reading history (a split, or an
 *   earlier backfill) waits until that lane merged. Nothing to read again (nothing published yet, or an empty
 *   range) completes it at once.
 * - Either way the offset keeps the signal's id (`signal`) until the next signal: a signal handed to the
 *   location again (after a restart, or a takeover that read the signals topic before its `done` outcome) is
 *   recognised and settled, never carried out twice.
 */
import { compareInstants, parseInstant } from '../../time/instant.js';
import type { LocationOffset } from '../model.js';
import type { LocationSignal } from '../ports.js';

/**
 * What to do about one signal now:
 * - 'wait': nothing yet (the location reads history already); ask again at the next page;
 * - 'settled': carried out before (the offset names it): nothing to commit;
 * - 'commit': commit `offset` (no records); `done`: the signal is complete with that commit.
 */
export type SignalStep =
  { kind: 'wait' } | { kind: 'settled' } | { kind: 'commit'; offset: LocationOffset; done: boolean };

/** The step of `signal` for a location whose offset is `offset` and whose first traversal starts at `startSince`. */
export function signalStep(
  offset: LocationOffset,
  signal: LocationSignal,
  startSince: string | null,
): SignalStep {
  if (offset.signal === signal.id || offset.history?.signal === signal.id) return { kind: 'settled' };
  if (signal.reset !== undefined) {
    return {
      kind: 'commit',
      offset: { since: signal.reset.to, cursor: null, watermark: null, boundary: [], signal: signal.id },
      done: true,
    };
  }
  const range = signal.backfill;
  if (range === undefined) return { kind: 'settled' };
  if (offset.history !== undefined) return { kind: 'wait' };
  const marked: LocationOffset = { ...offset, signal: signal.id };
  const since = range.since ?? startSince;
  const until = range.until ?? signal.acceptedAt;
  if (nothingPublished(offset) || (since !== null && !before(since, until)))
    return { kind: 'commit', offset: marked, done: true };
  return {
    kind: 'commit',
    offset: {
      ...marked,
      history: { since, cursor: null, watermark: null, boundary: [], until, signal: signal.id },
    },
    done: false,
  };
}

/** A location that has published nothing: its live lane reads everything anyway. */
function nothingPublished(offset: LocationOffset): boolean {
  return offset.watermark === null && offset.cursor === null && offset.since === null;
}

function before(a: string, b: string): boolean {
  const at = parseInstant(a);
  const bt = parseInstant(b);
  if (at === null || bt === null) throw new RangeError(`not RFC 3339 date-times: ${a}, ${b}`);
  return compareInstants(at, bt) < 0;
}
