/**
 * A history page read through the same-instant group at its lane's watermark (lanes.ts: why a history lane
 * needs it). Pure orchestration over a listing function; no clock, no state.
 *
 * A history lane's pages wait for their turns (backfill-queue.ts) longer than the API may keep a cursor
 * alive: the cursor a page hands on is then refused when the next page uses it, and the lane restarts from
 * its watermark W (traversal.ts restartAfterInvalidCursor). If W holds more calls than a page, every page from
 * `since = W` is all boundary duplicates and the next cursor is stale again: the lane never passes W.
 * So a history page that has not listed past W goes on at once with the cursor it was just given, until an
 * item after W is listed, or the listing ends (nextCursor null): every committed history page moves the
 * watermark past the instant it started from, whatever the cursor lifetime and the wait between turns, so
 * the lane reaches T0 and the lanes merge. A group's calls are then read (and committed) in one page: memory
 * and the page's size grow with the largest same-instant group, never with the lane's length.
 */
import { compareInstants, parseInstant, type Instant } from '../time/instant.js';
import type { MappedItem } from './model.js';
import type { ListedPage, PageRequest } from './ports.js';

/** One listing request, as the page's reader makes it (its priority bound). */
export type ListPage = (request: PageRequest, signal?: AbortSignal) => Promise<ListedPage>;

/** An item's listed updatedAt, if it has one that parses (a call, or a rejected item that gave its position). */
function listedAt(item: MappedItem): Instant | null {
  const text = item.ok ? item.call.updatedAt : (item.position?.updatedAt ?? null);
  return text === null ? null : parseInstant(text);
}

/** Whether `items` list something after `watermark` (with no watermark: anything dated). */
export function listsPast(items: readonly MappedItem[], watermark: Instant | null): boolean {
  return items.some((item) => {
    const at = listedAt(item);
    return at !== null && (watermark === null || compareInstants(at, watermark) > 0);
  });
}

/**
 * The page of `request`, followed by the pages after it while none lists past `watermark` (the lane's, at the
 * page's start) and the listing goes on: their items in order, and the last one's nextCursor. A cursor handed
 * back twice stops it (the page ends there; the traversal's loop detector judges that cursor when it is sent).
 */
export async function listThroughGroup(
  list: ListPage,
  request: PageRequest,
  watermark: string | null,
  signal?: AbortSignal,
): Promise<ListedPage> {
  const past = watermark === null ? null : parseInstant(watermark);
  let listed = await list(request, signal);
  if (listed.nextCursor === null || listsPast(listed.items, past)) return listed;
  const items = [...listed.items];
  const followed = new Set<string>(request.kind === 'next' ? [request.cursor] : []);
  while (listed.nextCursor !== null && !listsPast(listed.items, past) && !followed.has(listed.nextCursor)) {
    const cursor = listed.nextCursor;
    followed.add(cursor);
    listed = await list(
      { kind: 'next', locationUid: request.locationUid, cursor, limit: request.limit },
      signal,
    );
    items.push(...listed.items);
  }
  return { items, nextCursor: listed.nextCursor };
}
