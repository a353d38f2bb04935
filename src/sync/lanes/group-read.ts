/**
 * A lane's listing through the same-instant group at its watermark, in bounded pieces. Pure orchestration
 * over a listing function; no clock, no state.
 *
 * A cursor may be refused when a page uses it if it was handed on longer ago than the API keeps cursors
 * alive: a history page waits for its turn (backfill-queue.ts), and any page, live ones too, waits for the
 * previous page's single calls and commit, which a bulk import's enrichment can stretch past a short cursor
 * lifetime. The lane then restarts from its watermark W (traversal.ts restartAfterInvalidCursor). If W holds
 * more calls than a page, every listing from `since = W` starts with boundary duplicates, and the page of new
 * calls after them hands on a cursor that expires again while they are enriched: a live lane moves on by one
 * page per restart, and a history lane whose pages are all duplicates never passes W. So a listing that has
 * not listed past W goes on at once with the cursor it was just given, until an item after W is listed, the
 * listing ends (nextCursor null), or a piece of the group is listed: `calls` calls new to the boundary. A
 * cursor handed back twice stops it (the traversal's loop detector judges that cursor when it is sent). A
 * listing that lists past W at once (every poll of a caught-up location, a group's first page) is one
 * request, as asked.
 *
 * The two lanes keep what was listed differently:
 * - A live lane keeps the pages as listed (`listGroupPages`; live-lane.ts hands them to its next pages in
 *   order, listed-pages.ts): each is prepared and committed on its own, as it would have been listed, so a
 *   kill or a broker outage loses one page's single calls, not a piece's; only the listing ran ahead.
 * - A history lane merges them into one page (`listThroughGroup`), a piece of the group committed at once:
 *   its pages wait for turns the backfill queue gives out, and a piece is one turn.
 *
 * Why a piece may end inside the group: its offset (the cursor handed on, watermark W, the boundary holding
 * every call of the group published so far) resumes exactly in both ways the lane can resume. With the
 * cursor while the API takes it; and, when the API refuses it, from `since = W`, where the boundary skips
 * exactly what was published (the group's first pieces are then listed again, not held: duplicates are
 * not counted towards a piece). Every committed piece adds its calls to the boundary, so the lane passes W
 * whatever the cursor lifetime. For a history lane, once the boundary cannot hold the group (poll.boundaryCap,
 * or the offsets topic's byte budget), a restart from W could not tell what was published: the page then
 * reads on to the group's end as one page (its memory grows with the part of the group past the boundary's
 * capacity), and a restart from a W whose boundary overflowed does the same. Memory per page is therefore
 * about `piece.calls` calls plus the boundary's duplicates while the boundary can hold the group. A live
 * lane's pages, committed one by one, keep the traversal's own overflow rule (traversal.ts).
 */
import { compareInstants, parseInstant, type Instant } from '../../time/instant.js';
import type { BoundaryBounds } from './lanes.js';
import type { LaneOffset, MappedItem } from '../model.js';
import type { ListedPage, PageRequest } from '../ports.js';
import { boundaryEntryBytes } from '../location/traversal.js';

/** One listing request, as the page's reader makes it (its priority bound). */
export type ListPage = (request: PageRequest, signal?: AbortSignal) => Promise<ListedPage>;

/** How large a piece of a same-instant group one page holds. */
export interface GroupPiece {
  /** Calls new to the boundary after which the page may end inside the group (lanes.groupPieceSize). */
  calls: number;
  /** The lane's boundary bounds (lanes.ts lanePipeline): a piece ends only while they hold the whole group. */
  bounds: BoundaryBounds;
}

/**
 * A fingerprint's length bound for the boundary's byte estimate (fingerprint.ts writes 16 characters): an
 * estimate above the real size only makes a page read on, never end where the boundary would overflow.
 */
const FINGERPRINT_ESTIMATE = 'f'.repeat(32);

/** An item's listed updatedAt, if it has one that parses (a call, or a rejected item that gave its position). */
function listedAt(item: MappedItem): Instant | null {
  const text = item.ok ? item.call.updatedAt : (item.position?.updatedAt ?? null);
  return text === null ? null : parseInstant(text);
}

/** An item's uid, when it has a place in the listing (a call, or a rejected item with a position). */
function listedUid(item: MappedItem): string | null {
  return item.ok ? item.call.uid : (item.position?.uid ?? null);
}

/** Whether `items` list something after `watermark` (with no watermark: anything dated). */
export function listsPast(items: readonly MappedItem[], watermark: Instant | null): boolean {
  return items.some((item) => {
    const at = listedAt(item);
    return at !== null && (watermark === null || compareInstants(at, watermark) > 0);
  });
}

/**
 * The room `from`'s boundary leaves under `bounds`, counted down as a page lists calls new to it: negative
 * once the boundary could not hold the group (or when it overflowed already).
 */
class BoundaryRoom {
  private readonly known: ReadonlySet<string>;
  private calls: number;
  private bytes: number;
  /** Calls listed that the boundary does not hold yet. */
  added = 0;

  constructor(from: LaneOffset, bounds: BoundaryBounds) {
    this.known = new Set(from.boundary);
    let used = 0;
    for (const uid of from.boundary) used += boundaryEntryBytes(uid, from.boundaryFingerprints?.[uid]);
    this.calls = from.boundaryOverflow === true ? -1 : bounds.boundaryCap - from.boundary.length;
    this.bytes = (bounds.boundaryMaxBytes ?? Number.POSITIVE_INFINITY) - used;
  }

  list(items: readonly MappedItem[]): void {
    for (const item of items) {
      const uid = listedUid(item);
      if (uid === null || this.known.has(uid)) continue;
      this.added += 1;
      this.calls -= 1;
      this.bytes -= boundaryEntryBytes(uid, FINGERPRINT_ESTIMATE);
    }
  }

  get holdsAll(): boolean {
    return this.calls >= 0 && this.bytes >= 0;
  }
}

/** One listing request and what it listed. */
export interface ListedAt {
  request: PageRequest;
  listed: ListedPage;
}

/**
 * The page of `request` (from the lane's offset `from`), followed by the pages after it while none lists past
 * `from.watermark`, the listing goes on, no cursor came back twice, and `enough` (given each listed page in
 * order) has not said the pages hold a piece: every page as listed, in order.
 */
async function followGroup(
  list: ListPage,
  request: PageRequest,
  from: LaneOffset,
  enough: (listed: ListedPage) => boolean,
  signal?: AbortSignal,
): Promise<[ListedAt, ...ListedAt[]]> {
  let listed = await list(request, signal);
  const pages: [ListedAt, ...ListedAt[]] = [{ request, listed }];
  if (listed.nextCursor === null) return pages;
  const past = from.watermark === null ? null : parseInstant(from.watermark);
  if (listsPast(listed.items, past)) return pages;
  const followed = new Set<string>(request.kind === 'next' ? [request.cursor] : []);
  let held = enough(listed);
  while (
    listed.nextCursor !== null &&
    !listsPast(listed.items, past) &&
    !followed.has(listed.nextCursor) &&
    !held
  ) {
    const cursor = listed.nextCursor;
    followed.add(cursor);
    const next: PageRequest = {
      kind: 'next',
      locationUid: request.locationUid,
      cursor,
      limit: request.limit,
    };
    listed = await list(next, signal);
    pages.push({ request: next, listed });
    held = enough(listed);
  }
  return pages;
}

/**
 * A history page: the page of `request` and the pages after it through the group (followGroup), merged into
 * one, until they hold a `piece` (null: no piece, the whole group) of calls new to the boundary with room
 * for all of them in `piece.bounds` (see the module comment): their items in order, and the last one's
 * nextCursor.
 */
export async function listThroughGroup(
  list: ListPage,
  request: PageRequest,
  from: LaneOffset,
  piece: GroupPiece | null,
  signal?: AbortSignal,
): Promise<ListedPage> {
  let room: BoundaryRoom | null = null; // built only when a listing goes on through a group
  const enough = (listed: ListedPage): boolean => {
    if (piece === null) return false;
    room ??= new BoundaryRoom(from, piece.bounds);
    room.list(listed.items);
    return room.added >= piece.calls && room.holdsAll;
  };
  const [head, ...after] = await followGroup(list, request, from, enough, signal);
  if (after.length === 0) return head.listed;
  const items = [head, ...after].flatMap((p) => p.listed.items);
  return { items, nextCursor: (after.at(-1) ?? head).listed.nextCursor };
}

/**
 * A live lane's pages: the page of `request` and the pages after it through the group (followGroup), as
 * listed, until they hold `calls` calls new to `from`'s boundary (see the module comment).
 */
export function listGroupPages(
  list: ListPage,
  request: PageRequest,
  from: LaneOffset,
  calls: number,
  signal?: AbortSignal,
): Promise<[ListedAt, ...ListedAt[]]> {
  let known: ReadonlySet<string> | null = null; // built only when a listing goes on through a group
  let added = 0;
  const enough = (listed: ListedPage): boolean => {
    known ??= new Set(from.boundary);
    for (const item of listed.items) {
      const uid = listedUid(item);
      if (uid !== null && !known.has(uid)) added += 1;
    }
    return added >= calls;
  };
  return followGroup(list, request, from, enough, signal);
}
