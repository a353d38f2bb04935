/**
 * The seeded data set: locations with calls of every kind the spec talks about. One seed always gives the
 * same locations, uids, numbers and times, so tests can reason about exact data and benchmarks compare.
 *
 * Times are laid out on a fixed window ending at `endAt` (not "now"), so the data set does not depend on
 * when the sandbox started; the sandbox clock starts after the window so run-time writes sort last.
 */
import type { CallRecord } from './call-record.js';
import { CallStore } from './store.js';
import { createRandom, type Random } from '../random.js';

export interface DataOptions {
  seed?: number;
  /** Number of locations. */
  locations?: number;
  /** Calls generated per location, every kind included. */
  callsPerLocation?: number;
  /** Share of calls with isPrivate = true. */
  privateRatio?: number;
  /** Share of calls synced from a third-party integration (never listed). */
  thirdPartyRatio?: number;
  /** Share of calls whose CRM record cannot be represented (omitted from listing pages). */
  unrepresentableRatio?: number;
  /** Per location: `count` groups of `size` calls sharing one updatedAt (size > 100 beats any page). */
  sameInstantGroups?: { count: number; size: number };
  /** Share of calls with a conversation (conversationUid not null). Default 1: spec 4.4 says GET returns a value. */
  conversationRatio?: number;
  /** End of the time window (exclusive), ISO-8601. */
  endAt?: string;
  /** Length of the time window. */
  spanMs?: number;
}

export type ResolvedDataOptions = Required<DataOptions>;

export const DEFAULT_DATA_OPTIONS: ResolvedDataOptions = {
  seed: 1,
  locations: 3,
  callsPerLocation: 300,
  privateRatio: 0.2,
  thirdPartyRatio: 0.05,
  unrepresentableRatio: 0.02,
  sameInstantGroups: { count: 1, size: 120 },
  conversationRatio: 1,
  endAt: '2026-01-01T00:00:00.000Z',
  spanMs: 30 * 24 * 3600_000,
};

export function resolveDataOptions(options: DataOptions = {}): ResolvedDataOptions {
  const o = { ...DEFAULT_DATA_OPTIONS, ...options };
  const ratio = (name: string, v: number): void => {
    if (!(v >= 0 && v <= 1)) throw new RangeError(`data.${name} must be within 0..1, got ${v}`);
  };
  ratio('privateRatio', o.privateRatio);
  ratio('thirdPartyRatio', o.thirdPartyRatio);
  ratio('unrepresentableRatio', o.unrepresentableRatio);
  ratio('conversationRatio', o.conversationRatio);
  if (!Number.isInteger(o.locations) || o.locations < 1)
    throw new RangeError('data.locations must be an integer >= 1');
  if (!Number.isInteger(o.callsPerLocation) || o.callsPerLocation < 0) {
    throw new RangeError('data.callsPerLocation must be an integer >= 0');
  }
  if (!Number.isFinite(Date.parse(o.endAt)))
    throw new RangeError(`data.endAt is not a date-time: ${o.endAt}`);
  if (!(o.spanMs > 0)) throw new RangeError('data.spanMs must be > 0');
  const g = o.sameInstantGroups;
  if (!Number.isInteger(g.count) || g.count < 0 || !Number.isInteger(g.size) || g.size < 0) {
    throw new RangeError('data.sameInstantGroups needs integer count >= 0 and size >= 0');
  }
  return o;
}

const PHONE_SCRATCH = Buffer.alloc(32);

/** prefix + `digits` random digits, as one flat string (see Random.uuid for why flat). */
function phone(random: Random, prefix: string, digits: number): string {
  const start = PHONE_SCRATCH.write(prefix, 'latin1');
  for (let i = 0; i < digits; i++) PHONE_SCRATCH[start + i] = 48 + Math.floor(random.next() * 10);
  return PHONE_SCRATCH.toString('latin1', 0, start + digits);
}

/** Builds the store. 1,000 locations x 1,000 calls take about two seconds and ~400 MB. */
export function generateData(options: DataOptions = {}): CallStore {
  const o = resolveDataOptions(options);
  const random = createRandom(o.seed);
  const store = new CallStore();
  const endMs = Date.parse(o.endAt);
  const startMs = endMs - o.spanMs;
  for (let l = 0; l < o.locations; l++) {
    const locationUid = random.uuid();
    const locationPhoneNumber = phone(random, '+1555', 7);
    const records: CallRecord[] = new Array<CallRecord>(o.callsPerLocation);
    for (let i = 0; i < o.callsPerLocation; i++) {
      const endedAtMs = startMs + Math.floor(random.next() * o.spanMs);
      const durationMs = random.int(5_000, 1_800_000);
      // Most records last changed when the call ended (the CRM writes it then); some were edited later.
      const updatedAtMs = random.chance(0.2)
        ? Math.min(endMs - 1, endedAtMs + random.int(1, 86_400_000))
        : endedAtMs;
      records[i] = {
        uid: random.uuid(),
        locationUid,
        updatedAtMs,
        locationPhoneNumber,
        customerPhoneNumber: phone(random, '+1', 10),
        startedAtMs: endedAtMs - durationMs,
        endedAtMs,
        isPrivate: random.chance(o.privateRatio),
        conversationUid: random.chance(o.conversationRatio) ? random.uuid() : null,
        thirdParty: random.chance(o.thirdPartyRatio),
        representable: !random.chance(o.unrepresentableRatio),
      };
    }
    // Same-instant groups: consecutive blocks of calls moved onto one updatedAt each.
    let next = 0;
    for (let g = 0; g < o.sameInstantGroups.count && next < records.length; g++) {
      const instant = startMs + Math.floor(random.next() * o.spanMs);
      const end = Math.min(records.length, next + o.sameInstantGroups.size);
      for (; next < end; next++) {
        const r = records[next] as CallRecord;
        r.updatedAtMs = instant;
        if (r.endedAtMs > instant) {
          r.startedAtMs -= r.endedAtMs - instant;
          r.endedAtMs = instant;
        }
      }
    }
    store.addLocation(locationUid, locationPhoneNumber, records);
  }
  return store;
}
