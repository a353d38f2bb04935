/**
 * Every call the sandbox knows, by uid and, for the listing, by location in (updatedAt, uid) order.
 *
 * Contract: a record's updatedAt changes only through upsert(), which takes it out of its location's index
 * and puts it back at its new place, so the index is never out of order.
 */
import { randomUUID } from 'node:crypto';
import { LocationIndex } from './location-index.js';
import type { CallRecord } from './call-record.js';

/** Admin input: a new call (no uid, or an unknown uid) or changes to an existing one. */
export interface UpsertCallInput {
  uid?: string;
  /** Required for a new call; an existing call keeps its location. */
  locationUid?: string;
  /** Default: the sandbox clock's now. Epoch ms or an ISO-8601 date-time. */
  updatedAt?: string | number;
  customerPhoneNumber?: string | null;
  startedAt?: string | number;
  endedAt?: string | number;
  isPrivate?: boolean;
  conversationUid?: string | null;
  thirdParty?: boolean;
  representable?: boolean;
}

/** Admin input: a bulk import, `count` new calls of one location at one instant (a CRM import). */
export interface BulkImportInput {
  locationUid: string;
  count: number;
  /** The instant every imported call carries; default: the sandbox clock's now. Epoch ms or ISO-8601. */
  updatedAt?: string | number;
  /** Share of the imported calls that are private (default 0), every n-th one so that it is exact. */
  privateRatio?: number;
}

/** The most calls one bulk import creates (a sandbox bound: each is about 300 bytes held). */
export const MAX_BULK_IMPORT = 200_000;

export class UnknownLocationError extends Error {
  constructor(locationUid: string) {
    super(`unknown location ${locationUid}`);
    this.name = 'UnknownLocationError';
  }
}

function toMs(value: string | number, field: string): number {
  const ms = typeof value === 'number' ? value : Date.parse(value);
  if (!Number.isFinite(ms)) throw new RangeError(`${field} is not a date-time: ${String(value)}`);
  return Math.floor(ms);
}

export class CallStore {
  private readonly byUid = new Map<string, CallRecord>();
  private readonly indexes = new Map<string, LocationIndex>();
  private readonly phones = new Map<string, string>();
  /** Told of every upsert (webhooks/dispatcher.ts sends the call.* events from here); `created` for a new uid. */
  onChange: ((record: CallRecord, created: boolean) => void) | undefined;

  /** Location uids in creation order. */
  get locations(): string[] {
    return [...this.indexes.keys()];
  }

  get size(): number {
    return this.byUid.size;
  }

  /**
   * Adds a location with its calls (used by the generator). `records` need not be sorted; third-party ones
   * are kept out of the index.
   */
  addLocation(locationUid: string, locationPhoneNumber: string, records: CallRecord[]): void {
    const listable = records.filter((r) => !r.thirdParty);
    listable.sort((a, b) => a.updatedAtMs - b.updatedAtMs || (a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0));
    this.indexes.set(locationUid, new LocationIndex(listable));
    this.phones.set(locationUid, locationPhoneNumber);
    for (const r of records) this.byUid.set(r.uid, r);
  }

  hasLocation(locationUid: string): boolean {
    return this.indexes.has(locationUid);
  }

  index(locationUid: string): LocationIndex | undefined {
    return this.indexes.get(locationUid);
  }

  get(uid: string): CallRecord | undefined {
    return this.byUid.get(uid);
  }

  /** Listable records of a location (not third-party, representable), in listing order. */
  truth(locationUid: string): CallRecord[] {
    const index = this.indexes.get(locationUid);
    if (index === undefined) throw new UnknownLocationError(locationUid);
    return index.toArray().filter((r) => r.representable);
  }

  /**
   * Creates `count` calls of one location sharing one updatedAt (a bulk import: a same-instant group larger
   * than any page), each as a new call through upsert (so webhooks see them). Returns the instant used.
   */
  bulkImport(input: BulkImportInput, nowMs: number): { count: number; updatedAtMs: number } {
    const { locationUid, count } = input;
    if (!Number.isInteger(count) || count < 1 || count > MAX_BULK_IMPORT)
      throw new RangeError(`count must be an integer within 1..${MAX_BULK_IMPORT}`);
    if (!this.indexes.has(locationUid)) throw new UnknownLocationError(locationUid);
    const updatedAtMs = input.updatedAt === undefined ? nowMs : toMs(input.updatedAt, 'updatedAt');
    const ratio = input.privateRatio ?? 0;
    if (!(ratio >= 0 && ratio <= 1)) throw new RangeError('privateRatio must be within 0..1');
    const every = ratio === 0 ? 0 : Math.round(1 / ratio);
    for (let i = 0; i < count; i++)
      this.upsert(
        {
          locationUid,
          updatedAt: updatedAtMs,
          endedAt: updatedAtMs,
          isPrivate: every > 0 && i % every === 0,
        },
        nowMs,
      );
    return { count, updatedAtMs };
  }

  upsert(input: UpsertCallInput, nowMs: number): CallRecord {
    const existing = input.uid === undefined ? undefined : this.byUid.get(input.uid);
    const updatedAtMs = input.updatedAt === undefined ? nowMs : toMs(input.updatedAt, 'updatedAt');
    if (existing !== undefined) {
      if (input.locationUid !== undefined && input.locationUid !== existing.locationUid) {
        throw new RangeError(
          `call ${existing.uid} belongs to location ${existing.locationUid}; a call cannot move`,
        );
      }
      const index = this.indexes.get(existing.locationUid);
      if (!existing.thirdParty) index?.remove(existing);
      existing.updatedAtMs = updatedAtMs;
      if (input.customerPhoneNumber !== undefined) existing.customerPhoneNumber = input.customerPhoneNumber;
      if (input.startedAt !== undefined) existing.startedAtMs = toMs(input.startedAt, 'startedAt');
      if (input.endedAt !== undefined) existing.endedAtMs = toMs(input.endedAt, 'endedAt');
      if (input.isPrivate !== undefined) existing.isPrivate = input.isPrivate;
      if (input.conversationUid !== undefined) existing.conversationUid = input.conversationUid;
      if (input.thirdParty !== undefined) existing.thirdParty = input.thirdParty;
      if (input.representable !== undefined) existing.representable = input.representable;
      if (!existing.thirdParty) index?.insert(existing);
      this.onChange?.(existing, false);
      return existing;
    }
    const locationUid = input.locationUid;
    if (locationUid === undefined) throw new RangeError('a new call needs a locationUid');
    const index = this.indexes.get(locationUid);
    if (index === undefined) throw new UnknownLocationError(locationUid);
    const endedAtMs = input.endedAt === undefined ? updatedAtMs : toMs(input.endedAt, 'endedAt');
    const record: CallRecord = {
      uid: input.uid ?? randomUUID(),
      locationUid,
      updatedAtMs,
      locationPhoneNumber: this.phones.get(locationUid) ?? '+15550000000',
      customerPhoneNumber:
        input.customerPhoneNumber === undefined ? '+15551230000' : input.customerPhoneNumber,
      startedAtMs: input.startedAt === undefined ? endedAtMs - 60_000 : toMs(input.startedAt, 'startedAt'),
      endedAtMs,
      isPrivate: input.isPrivate ?? false,
      conversationUid: input.conversationUid === undefined ? randomUUID() : input.conversationUid,
      thirdParty: input.thirdParty ?? false,
      representable: input.representable ?? true,
    };
    this.byUid.set(record.uid, record);
    if (!record.thirdParty) index.insert(record);
    this.onChange?.(record, true);
    return record;
  }
}
