/**
 * Query parameters of the listing (spec 4.3), validated. Pure.
 *
 * When a cursor is sent, since, order and locationUid are ignored (rule 3), and so not validated either:
 * they do not take part in the request. limit always applies.
 */
import type { ListingOrder } from './cursor.js';

export interface ListingParams {
  cursor: string | null;
  /** 0..100, default 10. */
  limit: number;
  locationUid: string | null;
  order: ListingOrder;
  /** Inclusive lower bound in epoch ms (sub-millisecond fractions rounded up, so `>=` stays exact). */
  sinceMs: number | null;
}

export type ParamsResult = { ok: true; params: ListingParams } | { ok: false; message: string };

export const DEFAULT_LIMIT = 10;
export const MAX_LIMIT = 100;

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})$/;

/** RFC 3339 date-time to epoch ms, or null when it is not one. Fractions finer than 1 ms round up. */
export function parseDateTime(value: string): number | null {
  const m = DATE_TIME.exec(value);
  if (m === null) return null;
  const fraction = m[7] ?? '';
  const whole = `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}.${fraction.slice(0, 3).padEnd(3, '0')}${m[8]}`;
  const ms = Date.parse(whole.replace(/z$/, 'Z'));
  if (!Number.isFinite(ms)) return null;
  // Date.parse accepts 2026-02-31; a real date-time does not.
  const month = Number(m[2]);
  const day = Number(m[3]);
  if (
    month < 1 ||
    month > 12 ||
    day < 1 ||
    day > 31 ||
    Number(m[4]) > 23 ||
    Number(m[5]) > 59 ||
    Number(m[6]) > 60
  ) {
    return null;
  }
  const rest = fraction.slice(3);
  return /[1-9]/.test(rest) ? ms + 1 : ms;
}

function single(query: URLSearchParams, name: string): string | null | { duplicate: true } {
  const all = query.getAll(name);
  if (all.length > 1) return { duplicate: true };
  return all[0] ?? null;
}

export function parseListingParams(query: URLSearchParams): ParamsResult {
  const values: Record<string, string | null> = {};
  for (const name of ['cursor', 'limit', 'locationUid', 'order', 'since']) {
    const v = single(query, name);
    if (typeof v === 'object' && v !== null) return { ok: false, message: `${name} given more than once` };
    values[name] = v;
  }
  let limit = DEFAULT_LIMIT;
  if (values.limit !== null && values.limit !== undefined) {
    if (!/^\d{1,3}$/.test(values.limit) || Number(values.limit) > MAX_LIMIT) {
      return { ok: false, message: `limit must be an integer from 0 to ${MAX_LIMIT}` };
    }
    limit = Number(values.limit);
  }
  const cursor = values.cursor ?? null;
  if (cursor !== null) {
    if (cursor === '') return { ok: false, message: 'cursor is empty' };
    return { ok: true, params: { cursor, limit, locationUid: null, order: 'asc', sinceMs: null } };
  }
  const locationUid = values.locationUid ?? null;
  if (locationUid !== null && !UUID.test(locationUid))
    return { ok: false, message: 'locationUid must be a uuid' };
  const order = values.order ?? 'asc';
  if (order !== 'asc' && order !== 'desc') return { ok: false, message: 'order must be asc or desc' };
  let sinceMs: number | null = null;
  if (values.since !== null && values.since !== undefined) {
    sinceMs = parseDateTime(values.since);
    if (sinceMs === null) return { ok: false, message: 'since must be an RFC 3339 date-time' };
  }
  return {
    ok: true,
    params: {
      cursor: null,
      limit,
      locationUid: locationUid === null ? null : locationUid.toLowerCase(),
      order,
      sinceMs,
    },
  };
}
