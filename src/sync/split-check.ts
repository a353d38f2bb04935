/**
 * The split check of one location (lanes.ts): on its first page in this process, whether it is split at T0,
 * asked of the API's own clock. Orchestration around the pure split rule (needsSplitCheck, splitOffset):
 * - the probe: an order=desc listing whose first dated item gives the API's newest updatedAt;
 * - the refused-probe rule: an API that refuses order=desc costs the location its lanes, not its sync;
 * - the decision, once per process: made again only after a transient failure or an abort.
 */
import { ConnectorError } from '../errors/index.js';
import type { Logger } from '../logging/logger.js';
import type { Clock } from '../time/clock.js';
import { needsSplitCheck, splitOffset, type BoundaryBounds, type LaneSettings } from './lanes.js';
import { logNotSplit, logSplit, logSplitRefused } from './location-log.js';
import type { LocationOffset } from './model.js';
import type { CallsApi, ListedPage, PageRequest } from './ports.js';
import { LIVE_HINT } from './priority.js';

/** The probe's order=desc pages: items per page, and pages followed past empty ones (newestUpdatedAt). */
export const SPLIT_CHECK_LIMIT = 10;
export const SPLIT_CHECK_PAGES = 5;

/**
 * The API's newest updatedAt for a location, null when it lists no call. An order=desc listing of
 * SPLIT_CHECK_LIMIT items: the first that has an updatedAt (a call, or an item that failed to parse but gave
 * its position) is the newest. The API omits calls it cannot represent (spec 4.3 rule 6) and leaves their page
 * short with a cursor set, so an empty page with a cursor is followed, up to SPLIT_CHECK_PAGES pages: reading
 * it as "no call" would leave the location unsplit, its present waiting behind its whole history. Past that,
 * null (not split: correct, only slower). At live priority: the location's first page waits for it.
 */
export async function newestUpdatedAt(
  api: Pick<CallsApi, 'listPage'>,
  locationUid: string,
  signal?: AbortSignal,
): Promise<string | null> {
  let request: PageRequest = {
    kind: 'first',
    locationUid,
    since: null,
    order: 'desc',
    limit: SPLIT_CHECK_LIMIT,
  };
  for (let page = 0; page < SPLIT_CHECK_PAGES; page++) {
    const listed: ListedPage = await api.listPage(request, signal, LIVE_HINT);
    for (const item of listed.items) {
      const updatedAt = item.ok ? item.call.updatedAt : (item.position?.updatedAt ?? null);
      if (updatedAt !== null) return updatedAt;
    }
    if (listed.nextCursor === null) return null;
    request = { kind: 'next', locationUid, cursor: listed.nextCursor, limit: SPLIT_CHECK_LIMIT };
  }
  return null;
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
    let newest: string | null;
    try {
      newest = await newestUpdatedAt(this.options.api, locationUid, signal);
    } catch (error) {
      if (!splitCheckRefused(error, signal)) throw error;
      this.made = true;
      logSplitRefused(logger, locationUid, error);
      return null;
    }
    const split = splitOffset(position, newest, lanes, startSince, this.options.bounds);
    this.made = true;
    if (split === null) logNotSplit(logger, locationUid, newest);
    else logSplit(logger, locationUid, split, newest, startSince);
    return split;
  }
}
