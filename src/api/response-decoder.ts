/**
 * Turns a 2xx body into the shapes the sync engine uses, reading fields from configured paths
 * (the spec does not show the response shapes). Pure. A body of the wrong shape is "malformed": the
 * client retries it like a transient fault, then gives up with a fatal error for that location.
 */
import { readPath } from '../json/dotted-path.js';
import { isPlainObject } from '../json/json-object.js';
import { cursorProblem } from './call-mapper.js';

/** A listing page as the body carries it; the client maps its items (call-mapper.ts) into a ListedPage. */
export interface RawPage {
  /** The raw items, in the API's order; mapped and validated one by one by the call mapper. */
  items: readonly unknown[];
  /** null: the traversal is complete (spec 4.3 rule 4). */
  nextCursor: string | null;
}

export interface PageFields {
  itemsField: string;
  nextCursorField: string;
}

export type Decoded<T> = { ok: true; value: T } | { ok: false; problem: string };

/**
 * Items at `itemsField` must be an array. The cursor is read at `nextCursorField`, and when that path is
 * absent, at a top-level `nextCursor`; it must be a string or null. The spec says every response carries
 * nextCursor, so a body with neither is malformed (rather than silently ending the traversal). An empty
 * string is read as null: no cursor.
 */
export function decodeListPage(body: unknown, fields: PageFields): Decoded<RawPage> {
  if (!isPlainObject(body)) return { ok: false, problem: 'the page body is not a JSON object' };
  const items = readPath(body, fields.itemsField);
  if (!Array.isArray(items)) {
    return { ok: false, problem: `the page has no array at \`${fields.itemsField}\` (api.itemsField)` };
  }
  let cursor = readPath(body, fields.nextCursorField);
  if (cursor === undefined) cursor = readPath(body, 'nextCursor');
  if (cursor === undefined) {
    return {
      ok: false,
      problem: `the page has no \`${fields.nextCursorField}\` (api.nextCursorField) nor a top-level nextCursor`,
    };
  }
  if (cursor !== null && typeof cursor !== 'string') {
    return { ok: false, problem: `the page's next cursor is a ${typeof cursor}, not a string or null` };
  }
  const tooLong = cursor === null ? null : cursorProblem(cursor);
  if (tooLong !== null) return { ok: false, problem: tooLong };
  return { ok: true, value: { items, nextCursor: cursor === '' ? null : cursor } };
}

/**
 * The call object of a GET {callPath} body: at `callField`, or the body itself when that path is absent
 * (APIs that answer with the bare call). Present but not an object is malformed.
 */
export function decodeCallBody(body: unknown, callField: string): Decoded<Record<string, unknown>> {
  if (!isPlainObject(body)) return { ok: false, problem: 'the call body is not a JSON object' };
  const nested = readPath(body, callField);
  if (nested === undefined) return { ok: true, value: body };
  if (isPlainObject(nested)) return { ok: true, value: nested };
  return { ok: false, problem: `the call body's \`${callField}\` (api.callField) is not an object` };
}
