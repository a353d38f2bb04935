/**
 * The split check of one location (lanes.ts): on its first page in this process, whether it is split at T0,
 * asked of the API's own clock. Orchestration around the pure split rule (needsSplitCheck, splitOffset):
 * - the probe: an order=desc listing whose first dated item gives the API's newest updatedAt, and whose first
 *   at or before it less the overlap gives T0, as the API wrote it;
 * - the refused-probe rule: an API that refuses order=desc costs the location its lanes, not its sync;
 * - the decision, once per process: made again only after a transient failure or an abort.
 */
import { ConnectorError } from '../../errors/index.js';
import type { Logger } from '../../logging/logger.js';
import type { Clock } from '../../time/clock.js';
import { compareInstants, parseInstant, type Instant } from '../../time/instant.js';
import {
  needsSplitCheck,
  splitInstant,
  splitOffset,
  type BoundaryBounds,
  type LaneSettings,
} from './lanes.js';
import { logNotSplit, logSplit, logSplitRefused } from '../location/location-log.js';
import type { LocationOffset } from '../model.js';
import type { CallsApi, ListedPage, PageRequest } from '../ports.js';
import { LIVE_HINT } from '../location/priority.js';

/** The probe's order=desc pages: items per page, and pages followed past empty ones (probeSplit). */
export const SPLIT_CHECK_LIMIT = 10;
export const SPLIT_CHECK_PAGES = 5;

/**
 * What the probe read: the API's newest updatedAt for a location, and T0 as the API wrote it (SplitProbe.until).
 */
export interface SplitProbe {
  newest: string;
  /**
   * T0, an updatedAt exactly as the API wrote it (the live lane sends it back as `since`; an API may refuse
   * a date-time in another form, such as the connector's own toISOString): the first listed at or before
   * `newest` − overlapMs, newest first. When the probe's pages hold none (their calls all changed within the
   * overlap), the oldest they hold: the overlap is then narrower, T0 still one the API wrote.
   */
  until: string;
}

/**
 * The API's newest updatedAt for a location and T0 (SplitProbe), null when it lists no call. An order=desc
 * listing of SPLIT_CHECK_LIMIT items: the first that has an updatedAt (a call, or an item that failed to
 * parse but gave its position) is the newest; T0 is the first at or before newest − `overlapMs`, read on
 * (usually the same page) up to SPLIT_CHECK_PAGES pages. The API omits calls it cannot represent (spec 4.3
 * rule 6) and leaves their page short with a cursor set, so an empty page with a cursor is followed: reading
 * it as "no call" would leave the location unsplit, its present waiting behind its whole history. No dated
 * item within those pages: null (not split: correct, only slower). At live priority: the location's first
 * page waits for it.
 */
export async function probeSplit(
  api: Pick<CallsApi, 'listPage'>,
  locationUid: string,
  overlapMs: number,
  signal?: AbortSignal,
): Promise<SplitProbe | null> {
  let request: PageRequest = {
    kind: 'first',
    locationUid,
    since: null,
    order: 'desc',
    limit: SPLIT_CHECK_LIMIT,
  };
  let newest: string | null = null;
  let target: Instant | null = null;
  let oldest: string | null = null;
  for (let page = 0; page < SPLIT_CHECK_PAGES; page++) {
    const listed: ListedPage = await api.listPage(request, signal, LIVE_HINT);
    for (const item of listed.items) {
      const updatedAt = item.ok ? item.call.updatedAt : (item.position?.updatedAt ?? null);
      const instant = updatedAt === null ? null : parseInstant(updatedAt);
      if (updatedAt === null || instant === null) continue;
      if (newest === null || target === null) {
        newest = updatedAt;
        target = parseInstant(splitInstant(updatedAt, overlapMs));
      }
      if (target !== null && compareInstants(instant, target) <= 0) return { newest, until: updatedAt };
      oldest = updatedAt;
    }
    if (listed.nextCursor === null) break;
    request = { kind: 'next', locationUid, cursor: listed.nextCursor, limit: SPLIT_CHECK_LIMIT };
  }
  return newest === null ? null : { newest, until: oldest ?? newest };
}

/**
 * Whether the probe's failure means the API refuses it (the spec names order=desc; an API we did not write
 * may not take it): a ConnectorError that is not retriable, the signal not aborted. The location is then not
 * split; transient failures and aborts propagate, and the check is made again on the next page.
 */
export function splitCheckRefused(error: unknown, signal?: AbortSignal): error is ConnectorError {
  return signal?.aborted !== true && error instanceof ConnectorError && !error.retriable;
}

export interface SplitCheckOptions {
  locationUid: string;
  api: Pick<CallsApi, 'listPage'>;
  /** Unset: never split. */
  lanes: LaneSettings | undefined;
  /** `since` of a location's first traversal when nothing is stored (LocationSyncSettings.startSince). */
  startSince: string | null;
  /** The location's boundary bounds, to which the history lane's inherited boundary is cut (splitOffset). */
  bounds: BoundaryBounds;
  clock: Clock;
  logger: Logger;
}

export class SplitCheck {
  private made = false;

  constructor(private readonly options: SplitCheckOptions) {}

  /** Whether the split was decided in this process (decide() then asks nothing and answers null). */
  get decided(): boolean {
    return this.made;
  }

  /** The location's offset was replaced (a reset signal): the next decide() asks again, as at a start. */
  again(): void {
    this.made = false;
  }

  /**
   * The location's offset split at T0 when the rule says so, else null: lanes.ts decides from `position` and
   * the API's newest updatedAt. Decided once per process; after that (or when nothing needs checking) null
   * without a request. The split is committed with the location's next page (its offset then differs from
   * the stored one); a crash before that decides again.
   */
  async decide(position: LocationOffset, signal?: AbortSignal): Promise<LocationOffset | null> {
    if (this.made) return null;
    const { lanes, clock, logger, locationUid, startSince } = this.options;
    if (lanes === undefined || !needsSplitCheck(position, lanes, clock.now())) {
      this.made = true;
      return null;
    }
    let probe: SplitProbe | null;
    try {
      probe = await probeSplit(this.options.api, locationUid, lanes.overlapMs, signal);
    } catch (error) {
      if (!splitCheckRefused(error, signal)) throw error;
      this.made = true;
      logSplitRefused(logger, locationUid, error);
      return null;
    }
    const newest = probe?.newest ?? null;
    const split = splitOffset(position, newest, lanes, startSince, this.options.bounds, probe?.until);
    this.made = true;
    if (split === null) logNotSplit(logger, locationUid, newest);
    else logSplit(logger, locationUid, split, newest, startSince);
    return split;
  }
}
