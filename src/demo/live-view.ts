/**
 * The demo's terminal view: a pure rendering of per-location status snapshots. Rates come from the difference
 * between two snapshots, so this module holds no state and is unit-tested on plain data.
 */
import type { LocationStatus } from '../sync/scheduler/scheduled-location.js';

/** A location's status, with the demo instance that owns it when the demo runs several (`--instances`). */
export type ViewLocation = LocationStatus & { instance?: number };

/**
 * How the changes published since the start came, with webhooks on (demo-webhooks.ts): `webhook`, after a
 * delivery announced them; `poll`, found by a reconciliation poll that no delivery announced.
 */
export interface WebhookArrivals {
  webhook: number;
  poll: number;
}

export interface ViewFrame {
  /** Time of this snapshot, ms since the epoch. */
  at: number;
  locations: readonly ViewLocation[];
  /** With webhooks on: how the changes came. */
  arrivals?: WebhookArrivals;
}

/** How the changes came: by webhook or by a reconciliation poll (a missed delivery). */
export function arrivalsText(arrivals: WebhookArrivals): string {
  return `changes by webhook ${arrivals.webhook}, by reconciliation poll ${arrivals.poll}`;
}

const pad = (text: string, width: number) =>
  text.length >= width ? text.slice(0, width) : text + ' '.repeat(width - text.length);
const padLeft = (text: string, width: number) =>
  text.length >= width ? text : ' '.repeat(width - text.length) + text;

/** "12s", "3m04s", "2h05m": lag of the high-water mark behind now. */
export function formatLag(ms: number | null): string {
  if (ms === null) return '-';
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m${String(seconds % 60).padStart(2, '0')}s`;
  return `${Math.floor(seconds / 3600)}h${String(Math.floor((seconds % 3600) / 60)).padStart(2, '0')}m`;
}

function published(frame: ViewFrame): number {
  return frame.locations.reduce((n, l) => n + l.totals.published, 0);
}

/** Records published per second between two frames (0 for the first frame). */
export function publishRate(previous: ViewFrame | null, current: ViewFrame): number {
  if (previous === null || current.at <= previous.at) return 0;
  return ((published(current) - published(previous)) * 1000) / (current.at - previous.at);
}

/**
 * A split location's two lanes (docs/sync.md "Lanes"): the live lane's state, and how far its history lane is
 * from T0, with the ETA at the rate read so far and the records it published.
 */
function lanesPosition(liveMidTraversal: boolean, backfill: NonNullable<LocationStatus['backfill']>): string {
  const left =
    backfill.remainingSeconds === null ? 'starting' : `${formatLag(backfill.remainingSeconds * 1000)} left`;
  const eta = backfill.etaSeconds === null ? '' : `, eta ${formatLag(backfill.etaSeconds * 1000)}`;
  return (
    `live ${liveMidTraversal ? 'mid-traversal' : 'caught up'} | ` +
    `history ${left} to T0${eta} (${backfill.records} records)`
  );
}

/** The lines of one frame of the live view. */
export function renderFrame(previous: ViewFrame | null, current: ViewFrame): string[] {
  const rate = publishRate(previous, current);
  // Several instances (distributed mode): an owner column, and how many locations each owns.
  const owners = [
    ...new Set(current.locations.flatMap((l) => (l.instance === undefined ? [] : [l.instance]))),
  ];
  const owner = (l: ViewLocation) => (owners.length === 0 ? '' : `${padLeft(`#${l.instance ?? '-'}`, 5)} `);
  const ownedBy = owners
    .sort((a, b) => a - b)
    .map((i) => `#${i} ${current.locations.filter((l) => l.instance === i).length}`)
    .join(', ');
  const lines = [
    `published ${published(current)} records  (${rate.toFixed(1)}/s)   locations ${current.locations.length}` +
      (owners.length === 0 ? '' : `   owned by instance ${ownedBy}`) +
      (current.arrivals === undefined ? '' : `   ${arrivalsText(current.arrivals)}`),
    `${pad('location', 38)} ${owners.length === 0 ? '' : `${padLeft('inst', 5)} `}${pad('state', 8)} ${padLeft('published', 9)} ${padLeft('deduped', 7)} ${padLeft('redacted', 8)} ${padLeft('travs', 5)} ${padLeft('lag', 7)}  position`,
  ];
  for (const location of current.locations) {
    const watermark = location.offset.watermark;
    const lag = watermark === null ? null : current.at - new Date(watermark).getTime();
    const position = location.lastError
      ? `error ${location.lastError.code}`
      : location.backfill !== null && location.backfill !== undefined
        ? lanesPosition(location.offset.cursor !== null, location.backfill)
        : location.offset.cursor !== null
          ? 'mid-traversal (cursor)'
          : 'caught up';
    lines.push(
      `${pad(location.locationUid, 38)} ${owner(location)}${pad(location.state, 8)} ${padLeft(String(location.totals.published), 9)} ` +
        `${padLeft(String(location.totals.deduplicated), 7)} ${padLeft(String(location.totals.redacted), 8)} ` +
        `${padLeft(String(location.totals.traversalsCompleted), 5)} ${padLeft(formatLag(lag), 7)}  ${position}`,
    );
  }
  return lines;
}

/**
 * The frame cut to a terminal of `columns` x `rows`, so that drawing the next frame over it erases all of it:
 * each line at most `columns - 1` characters (a line that wraps takes two rows, and the cursor-up of the next
 * redraw would leave its tail behind), at most `rows - 1` lines (rows scrolled off the top cannot be redrawn),
 * the locations that do not fit summed up in the last line. Unknown or zero sizes leave that dimension as it is.
 */
export function fitToTerminal(lines: readonly string[], columns?: number, rows?: number): string[] {
  let fitted = [...lines];
  if (rows !== undefined && rows > 1 && fitted.length > rows - 1) {
    const kept = Math.max(1, rows - 2);
    fitted = [...fitted.slice(0, kept), `… ${lines.length - kept} more lines (the whole table: /status)`];
    fitted = fitted.slice(0, rows - 1);
  }
  if (columns !== undefined && columns > 1) fitted = fitted.map((line) => line.slice(0, columns - 1));
  return fitted;
}
