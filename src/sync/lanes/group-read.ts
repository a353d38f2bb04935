/**
 * A lane's page read through the same-instant group at its lane's watermark, in bounded pieces. Pure
 * orchestration over a listing function; no clock, no state. Both lanes read this way (page-reading.ts).
 *
 * A cursor may be refused when a page uses it if it was handed on longer ago than the API keeps cursors
 * alive: a history page waits for its turn (backfill-queue.ts), and any page, live ones too, waits for the
 * previous page's single calls and commit, which a bulk import's enrichment can stretch past a short cursor
 * lifetime. The lane then restarts from its watermark W (traversal.ts restartAfterInvalidCursor). If W holds
 * more calls than a page, every page from `since = W` starts with boundary duplicates, and the page listing
 * new calls after them hands on a cursor that expires again while those calls are enriched: one page of
 * progress per restart (a history lane with pages all duplicates would never pass W at all).
 * So a page that has not listed past W goes on at once with the cursor it was just given, until an item
 * after W is listed, the listing ends (nextCursor null), or the page holds a piece of the group:
 * `piece.calls` calls new to the boundary, with room left in the boundary for every one of them. A restart
 * then costs one listing of the duplicates and moves the lane on by a piece, not a page.
 *
 * Why a piece may end inside the group: its offset (the cursor handed on, watermark W, the boundary holding
 * every call of the group published so far) resumes exactly in both ways the lane can resume. With the
 * cursor while the API takes it; and, when the API refuses it, from `since = W`, where the boundary skips
 * exactly what was published (the group's first pieces are then listed again, not held: duplicates are
 * not counted towards a piece). Every committed piece adds its calls to the boundary, so the lane passes W
 * whatever the cursor lifetime. Once the boundary cannot hold the group (poll.boundaryCap, or the offsets
 * topic's byte budget), a restart from W could not tell what was published: the page then reads on to the
 * group's end as one page (its memory grows with the part of the group past the boundary's capacity), and a
 * restart from a W whose boundary overflowed does the same. Memory per page is therefore about
 * `piece.calls` calls plus the boundary's duplicates while the boundary can hold the group.
 *
 * A page that lists past W at once (every poll of a caught-up location, the first page of a group) is one
 * listing, as asked.
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

/**
 * The page of `request` (from the lane's offset `from`), followed by the pages after it while none lists
 * past `from.watermark`, the listing goes on and the page does not hold a `piece` of the group yet (see the
 * module comment; null: no piece, the whole group): their items in order, and the last one's nextCursor. A
 * cursor handed back twice stops it (the page ends there; the traversal's loop detector judges that cursor
 * when it is sent).
 */
export async function listThroughGroup(
  list: ListPage,
  request: PageRequest,
  from: LaneOffset,
  piece: GroupPiece | null,
  signal?: AbortSignal,
): Promise<ListedPage> {
  let listed = await list(request, signal);
  if (listed.nextCursor === null) return listed;
  const past = from.watermark === null ? null : parseInstant(from.watermark);
  if (listsPast(listed.items, past)) return listed;
  const room = piece === null ? null : new BoundaryRoom(from, piece.bounds);
  room?.list(listed.items);
  const holdsPiece = (): boolean =>
    piece !== null && room !== null && room.added >= piece.calls && room.holdsAll;
  const items = [...listed.items];
  const followed = new Set<string>(request.kind === 'next' ? [request.cursor] : []);
  while (
    listed.nextCursor !== null &&
    !listsPast(listed.items, past) &&
    !followed.has(listed.nextCursor) &&
    !holdsPiece()
  ) {
    const cursor = listed.nextCursor;
    followed.add(cursor);
    listed = await list(
      { kind: 'next', locationUid: request.locationUid, cursor, limit: request.limit },
      signal,
    );
    room?.list(listed.items);
    for (const item of listed.items) items.push(item);
  }
  return { items, nextCursor: listed.nextCursor };
}
