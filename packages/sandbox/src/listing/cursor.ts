/**
 * The listing cursor: opaque to clients, tamper-evident (HMAC-SHA256 over the payload), and self-contained.
 * It carries the since, order and locationUid of the listing it came from (spec 4.3 rule 3), where the
 * next page starts, and when it stops being accepted (sandbox clock).
 *
 * Where the next page starts depends on the order, on purpose:
 * - asc: a keyset position (the updatedAt and uid of the last record the page passed). A record updated
 *   during the traversal moves past the position and is met again at the end (rule 7: an interrupted
 *   poll resumes where it stopped).
 * - desc: an offset from the top. A record updated during the traversal lands at the front and shifts
 *   every later page by one (rule 8: desc is unsafe for incremental sync), as the spec warns.
 *
 * Format: base64url(JSON payload) "." base64url(HMAC). Pure functions; the key is the sandbox's secret.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export type ListingOrder = 'asc' | 'desc';

export interface CursorPayload {
  /** Location the listing is restricted to; null = every location the token can access. */
  locationUid: string | null;
  /** Inclusive lower bound in epoch ms, null = none. */
  sinceMs: number | null;
  order: ListingOrder;
  /** asc: the last record passed (the next page starts strictly after it). */
  after?: { ms: number; uid: string };
  /** desc: records already passed from the top. */
  offset?: number;
  /** Sandbox-clock ms after which the cursor is refused with 410 cursor_expired. */
  expiresAtMs: number;
}

export type CursorDecodeResult =
  { ok: true; payload: CursorPayload } | { ok: false; reason: 'malformed' | 'bad_signature' | 'expired' };

function sign(key: Buffer, body: string): Buffer {
  return createHmac('sha256', key).update(body).digest();
}

export function encodeCursor(payload: CursorPayload, key: Buffer): string {
  const compact = {
    l: payload.locationUid,
    s: payload.sinceMs,
    o: payload.order,
    ...(payload.after === undefined ? {} : { a: [payload.after.ms, payload.after.uid] }),
    ...(payload.offset === undefined ? {} : { n: payload.offset }),
    e: payload.expiresAtMs,
  };
  const body = Buffer.from(JSON.stringify(compact)).toString('base64url');
  return `${body}.${sign(key, body).toString('base64url')}`;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Verifies the signature first (nothing of an unsigned payload is trusted), then the shape, then expiry. */
export function decodeCursor(cursor: string, key: Buffer, nowMs: number): CursorDecodeResult {
  const parts = cursor.split('.');
  if (
    parts.length !== 2 ||
    !/^[A-Za-z0-9_-]+$/.test(parts[0] ?? '') ||
    !/^[A-Za-z0-9_-]+$/.test(parts[1] ?? '')
  ) {
    return { ok: false, reason: 'malformed' };
  }
  const [body, mac] = parts as [string, string];
  const expected = sign(key, body);
  const given = Buffer.from(mac, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return { ok: false, reason: 'bad_signature' };
  let raw: unknown;
  try {
    raw = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  } catch {
    return { ok: false, reason: 'malformed' };
  }
  if (!isRecord(raw)) return { ok: false, reason: 'malformed' };
  const { l, s, o, a, n, e } = raw;
  if (
    (l !== null && typeof l !== 'string') ||
    (s !== null && typeof s !== 'number') ||
    typeof e !== 'number'
  ) {
    return { ok: false, reason: 'malformed' };
  }
  if (o !== 'asc' && o !== 'desc') return { ok: false, reason: 'malformed' };
  const payload: CursorPayload = { locationUid: l, sinceMs: s, order: o, expiresAtMs: e };
  if (a !== undefined) {
    if (!Array.isArray(a) || typeof a[0] !== 'number' || typeof a[1] !== 'string')
      return { ok: false, reason: 'malformed' };
    payload.after = { ms: a[0], uid: a[1] };
  }
  if (n !== undefined) {
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) return { ok: false, reason: 'malformed' };
    payload.offset = n;
  }
  if (nowMs > e) return { ok: false, reason: 'expired' };
  return { ok: true, payload };
}
