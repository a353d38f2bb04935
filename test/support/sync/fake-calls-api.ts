/**
 * A small in-memory model of the calls API (spec 4.3 / 4.4) for unit tests of the sync engine: no HTTP.
 * Listing: order by updatedAt (stable by insertion), inclusive since, cursors carrying since/locationUid
 * and a position; optional faults. Items are mapped by the real call mapper, as the API client does. The
 * real sandbox is used by the component tests.
 */
import { mapListedItem, mapSingleCall } from '../../../src/api/call-mapper.js';
import { FatalError } from '../../../src/errors/index.js';
import type { SingleCall } from '../../../src/sync/model.js';
import {
  InvalidCursorError,
  type CallsApi,
  type ListedPage,
  type PageRequest,
} from '../../../src/sync/ports.js';
import { compareDateTimes } from '../../../src/time/instant.js';

export interface FakeCall {
  uid: string;
  locationUid: string;
  updatedAt: string;
  customerPhoneNumber?: string | null;
  isPrivate?: boolean;
  /** Listed with this raw shape instead (bad items). */
  raw?: Record<string, unknown>;
}

interface CursorState {
  since: string | null;
  /** When the cursor was handed out (cursorLifetime's clock). */
  issuedAt?: number;
  locationUid: string;
  position: number;
  order?: 'asc' | 'desc';
  /** Keyset cursors (`keysetCursors`): the last item passed, as (updatedAt, seq). */
  after?: { updatedAt: string; seq: number };
}

export class FakeCallsApi implements CallsApi {
  private readonly calls: FakeCall[] = [];
  readonly requests: PageRequest[] = [];
  readonly gets: string[] = [];
  /** uids listed but answered 404 by getCall. */
  readonly gone = new Set<string>();
  /** uids omitted from pages ("cannot be represented"). */
  readonly omitted = new Set<string>();
  /** The next n cursor requests fail as expired. */
  expireNextCursors = 0;
  /** Answer every page with this cursor (a loop). */
  loopCursor: string | null = null;
  /** Errors thrown by the next listPage calls. */
  readonly listErrors: Error[] = [];
  /** Per uid, errors thrown by the next getCall calls for it. */
  readonly getErrors = new Map<string, Error[]>();
  /** Per uid, the updatedAt getCall answers instead of the call's (another version). */
  readonly getUpdatedAt = new Map<string, string>();
  /**
   * Cursors of ascending listings name the last item passed (updatedAt, then order of change) instead of
   * a position, as a keyset-paged API does: a call updated while a traversal is open moves, and neither
   * shifts later pages nor is listed twice at one version.
   */
  keysetCursors = false;
  /**
   * The only form of `since` accepted (say, the form the API writes its updatedAt in); another is refused as
   * a 400 to a request without a cursor is (fatal). null: any date-time.
   */
  sinceForm: RegExp | null = null;
  /**
   * Cursors expire this long after the page that handed them out, on `now` (a manual clock's): refused as
   * expired (410). null: they never expire.
   */
  cursorLifetime: { ms: number; now: () => number } | null = null;
  /** Cursors refused as expired by cursorLifetime. */
  expiredCursors = 0;
  /** Order of change of each call (its last upsert), the listing's tie-breaker. */
  private readonly seqOf = new Map<string, number>();
  private seq = 0;

  constructor(calls: FakeCall[] = []) {
    for (const call of calls) this.upsert(call);
  }

  /** Adds or updates a call; an update moves it to its new updatedAt like the real listing. */
  upsert(call: FakeCall): void {
    const index = this.calls.findIndex((c) => c.uid === call.uid);
    if (index >= 0) this.calls.splice(index, 1);
    this.calls.push(call);
    this.seqOf.set(call.uid, this.seq++);
  }

  private sorted(locationUid: string, since: string | null): FakeCall[] {
    return this.calls
      .filter(
        (c) => c.locationUid === locationUid && (since === null || compareDateTimes(c.updatedAt, since) >= 0),
      )
      .map((c, i) => ({ c, i }))
      .sort((a, b) => compareDateTimes(a.c.updatedAt, b.c.updatedAt) || a.i - b.i)
      .map(({ c }) => c);
  }

  async listPage(request: PageRequest, _signal?: AbortSignal): Promise<ListedPage> {
    this.requests.push(request);
    const error = this.listErrors.shift();
    if (error !== undefined) throw error;
    let state: CursorState;
    if (request.kind === 'next') {
      if (this.expireNextCursors > 0) {
        this.expireNextCursors -= 1;
        throw new InvalidCursorError({
          apiCode: 'cursor_expired',
          status: 410,
          recognised: true,
          detail: 'HTTP 410: {"error":{"code":"cursor_expired"}}',
        });
      }
      state = JSON.parse(Buffer.from(request.cursor, 'base64url').toString('utf8')) as CursorState;
      const lifetime = this.cursorLifetime;
      if (lifetime !== null && lifetime.now() - (state.issuedAt ?? 0) > lifetime.ms) {
        this.expiredCursors += 1;
        throw new InvalidCursorError({
          apiCode: 'cursor_expired',
          status: 410,
          recognised: true,
          detail: 'HTTP 410: {"error":{"code":"cursor_expired"}}',
        });
      }
    } else {
      if (request.since !== null && this.sinceForm !== null && !this.sinceForm.test(request.since))
        throw new FatalError('API_BAD_REQUEST', `since ${request.since} refused (HTTP 400)`);
      state = {
        since: request.since,
        locationUid: request.locationUid,
        position: 0,
        ...(request.order === 'desc' && { order: 'desc' as const }),
      };
    }
    let matching = this.sorted(state.locationUid, state.since);
    if (state.order === 'desc') matching = matching.reverse();
    const keyset = this.keysetCursors && state.order !== 'desc';
    const after = state.after;
    if (keyset && after !== undefined)
      matching = matching.filter(
        (c) =>
          (compareDateTimes(c.updatedAt, after.updatedAt) || (this.seqOf.get(c.uid) ?? 0) - after.seq) > 0,
      );
    const start = keyset ? 0 : state.position;
    const slice = matching.slice(start, start + request.limit);
    const end = start + slice.length;
    const last = slice.at(-1);
    const issued = this.cursorLifetime === null ? {} : { issuedAt: this.cursorLifetime.now() };
    const nextState: CursorState =
      keyset && last !== undefined
        ? { ...state, ...issued, after: { updatedAt: last.updatedAt, seq: this.seqOf.get(last.uid) ?? 0 } }
        : { ...state, ...issued, position: end };
    const nextCursor =
      this.loopCursor ??
      (end < matching.length ? Buffer.from(JSON.stringify(nextState)).toString('base64url') : null);
    return {
      items: slice
        .filter((c) => !this.omitted.has(c.uid))
        .map(
          (c) =>
            c.raw ?? {
              uid: c.uid,
              updatedAt: c.updatedAt,
              locationPhoneNumber: '+15550000',
              customerPhoneNumber:
                c.customerPhoneNumber === undefined ? `+1555${c.uid}` : c.customerPhoneNumber,
              startedAt: null,
              endedAt: null,
              isPrivate: null,
              conversationUid: null,
            },
        )
        .map((item) => mapListedItem(item, request.locationUid)),
      nextCursor,
    };
  }

  async getCall(uid: string): Promise<SingleCall | null> {
    this.gets.push(uid);
    const error = this.getErrors.get(uid)?.shift();
    if (error !== undefined) throw error;
    if (this.gone.has(uid)) return null;
    const call = this.calls.find((c) => c.uid === uid);
    if (call === undefined) return null;
    return mapSingleCall(
      {
        uid,
        updatedAt: this.getUpdatedAt.get(uid) ?? call.updatedAt,
        startedAt: '2024-01-01T00:00:00Z',
        endedAt: '2024-01-01T00:01:00Z',
        isPrivate: call.isPrivate ?? false,
        conversationUid: `conv-${uid}`,
      },
      uid,
    );
  }
}
