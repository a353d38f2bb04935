/**
 * The chaos checker's rules: pure functions over plain data (what the witness read, the sandbox's truth, the
 * history of every version it held), each returning a count plus a few samples. The checker (checker.ts) does
 * the reading; nothing here does I/O, so each rule is unit-tested (test/unit/tools/chaos-judge.test.ts).
 *
 * A version is identified by (uid, updatedAt in ms).
 */

/** A call as the sandbox's admin API and the driver's history hold it (every field, ISO times). */
export interface TruthCall {
  uid: string;
  locationUid: string;
  updatedAt: string;
  locationPhoneNumber: string;
  customerPhoneNumber: string | null;
  startedAt: string;
  endedAt: string;
  isPrivate: boolean;
  conversationUid: string | null;
}

/** A decoded value of the Call schema, as the checker reads it (only the fields it checks; times as written). */
export interface PublishedCall {
  uid: string;
  locationUid: string;
  updatedAt: number;
  updatedAtIso: string;
  locationPhoneNumber: string | null;
  customerPhoneNumber: string | null;
  startedAt: number | null;
  endedAt: number | null;
  isPrivate: boolean | null;
  conversationUid: string | null;
  enriched: boolean;
  ingestedAt: number | null;
}

/** One committed record of the calls topic, where the witness read it. */
export interface PublishedRecord {
  partition: number;
  offset: number;
  /** Its Kafka timestamp (ms): when the connector's producer sent it inside its transaction; null: none. */
  timestamp?: number | null;
  key: string | null;
  call: PublishedCall;
  /** The backfill signal whose re-read published it (its calls-connector.source.signal header); null: a change. */
  reRead?: string | null;
}

/** A backfill signal the run sent: its id, location and range [since, until). */
export interface Backfill {
  id: string;
  location: string;
  since: string;
  until: string;
}

/** How far the witness read one partition (its summary line). */
export interface PartitionRead {
  partition: number;
  low: number;
  high: number;
  lastStable: number;
  position: number;
  records: number;
  reachedEnd: boolean;
}

/** A location's stored offset, as the connector writes it to the offsets topic (JSON). */
export interface StoredOffset {
  cursor?: string | null;
  watermark?: string | null;
  history?: unknown;
}

export interface Finding {
  count: number;
  samples: string[];
}

const SAMPLES = 5;

export function finding(): Finding {
  return { count: 0, samples: [] };
}

export function note(f: Finding, sample: string): void {
  f.count++;
  if (f.samples.length < SAMPLES) f.samples.push(sample);
}

export const versionKey = (uid: string, updatedAtMs: number): string => `${uid}@${updatedAtMs}`;

/** The version a record carries: its uid and its updatedAtIso in ms (the field the truth is compared by). */
export const publishedVersion = (call: PublishedCall): string =>
  versionKey(call.uid, Date.parse(call.updatedAtIso));

export function asPublished(value: unknown): PublishedCall {
  const v = value as Record<string, unknown>;
  const num = (x: unknown): number | null => (typeof x === 'number' ? x : x === null ? null : Number(x));
  return {
    uid: String(v.uid),
    locationUid: String(v.locationUid),
    updatedAt: Number(v.updatedAt),
    updatedAtIso: String(v.updatedAtIso),
    locationPhoneNumber: (v.locationPhoneNumber as string | null) ?? null,
    customerPhoneNumber: (v.customerPhoneNumber as string | null) ?? null,
    startedAt: num(v.startedAt ?? null),
    endedAt: num(v.endedAt ?? null),
    isPrivate: (v.isPrivate as boolean | null) ?? null,
    conversationUid: (v.conversationUid as string | null) ?? null,
    enriched: v.enriched === true,
    ingestedAt: num(v.ingestedAt ?? null),
  };
}

/** The fields of a published record that differ from the truth of its version (empty: it is right). */
export function compareVersion(record: PublishedCall, truth: TruthCall): string[] {
  const differences: string[] = [];
  const micros = (iso: string): number => Date.parse(iso) * 1000;
  if (record.locationUid !== truth.locationUid) differences.push('locationUid');
  if (record.locationPhoneNumber !== truth.locationPhoneNumber) differences.push('locationPhoneNumber');
  if (record.enriched) {
    if (record.startedAt !== micros(truth.startedAt)) differences.push('startedAt');
    if (record.endedAt !== micros(truth.endedAt)) differences.push('endedAt');
    if (record.isPrivate !== truth.isPrivate) differences.push('isPrivate');
    if (record.conversationUid !== truth.conversationUid) differences.push('conversationUid');
    if (!truth.isPrivate && record.customerPhoneNumber !== truth.customerPhoneNumber)
      differences.push('customerPhoneNumber');
  } else if (
    record.startedAt !== null ||
    record.endedAt !== null ||
    record.isPrivate !== null ||
    record.conversationUid !== null
  )
    // The listing carries none of the single call's fields (spec 2.3): an unenriched record has them all null.
    differences.push('unenriched with values');
  return differences;
}

/** A customer number is published only for a version known (enriched) to be public. */
export function leaksNumber(record: PublishedCall, version: TruthCall): boolean {
  return record.customerPhoneNumber !== null && (version.isPrivate || !record.enriched);
}

/** Every version the sandbox held (history and current truth) by version key, and every uid it listed. */
export function knownVersions(calls: Iterable<TruthCall>): {
  known: Map<string, TruthCall>;
  listedUids: Set<string>;
} {
  const known = new Map<string, TruthCall>();
  const listedUids = new Set<string>();
  for (const call of calls) {
    known.set(versionKey(call.uid, Date.parse(call.updatedAt)), call);
    listedUids.add(call.uid);
  }
  return { known, listedUids };
}

export interface RecordFindings {
  unlisted: Finding;
  unknownVersion: Finding;
  privacyLeaks: Finding;
  enrichmentMismatches: Finding;
  unenriched: number;
}

/**
 * Each record against the version it claims to be: a uid never listed (third-party, unrepresentable), a
 * version never held or a key that is not its uid (a record mixing versions), a number leaked, a field unequal.
 */
export function judgeRecords(
  records: readonly PublishedRecord[],
  known: ReadonlyMap<string, TruthCall>,
  listedUids: ReadonlySet<string>,
): RecordFindings {
  const out: RecordFindings = {
    unlisted: finding(),
    unknownVersion: finding(),
    privacyLeaks: finding(),
    enrichmentMismatches: finding(),
    unenriched: 0,
  };
  for (const { key: recordKey, call } of records) {
    const key = publishedVersion(call);
    if (recordKey !== call.uid) note(out.unknownVersion, `${key}: key differs`);
    if (!call.enriched) out.unenriched++;
    const version = known.get(key);
    if (version === undefined) {
      if (listedUids.has(call.uid)) note(out.unknownVersion, key);
      else note(out.unlisted, key);
      continue;
    }
    if (leaksNumber(call, version))
      note(
        out.privacyLeaks,
        `${key}: number published (private=${version.isPrivate}, enriched=${call.enriched})`,
      );
    const differences = compareVersion(call, version);
    if (differences.length > 0) note(out.enrichmentMismatches, `${key}: ${differences.join(', ')}`);
  }
  return out;
}

/** Each call's current version (the truth after the run) that no committed record carries. */
export function findLost(
  truth: ReadonlyMap<string, readonly TruthCall[]>,
  records: readonly PublishedRecord[],
): Finding {
  const published = new Set(records.map((r) => publishedVersion(r.call)));
  const lost = finding();
  for (const [location, calls] of truth)
    for (const call of calls) {
      const key = versionKey(call.uid, Date.parse(call.updatedAt));
      if (!published.has(key)) note(lost, `${key} (location ${location})`);
    }
  return lost;
}

/**
 * Each copy of a version beyond its first, with when each copy was encoded (ingestedAt). A backfill's re-read is
 * published on purpose beside the change's record: copies count apart per re-reading signal (a re-read published
 * twice by one backfill is a duplicate; one copy of a change and one of a re-read are not).
 */
export function findDuplicates(records: readonly PublishedRecord[]): {
  duplicated: Finding;
  versions: number;
} {
  const copies = new Map<string, string[]>();
  const versions = new Set<string>();
  for (const { call, reRead } of records) {
    const version = publishedVersion(call);
    versions.add(version);
    const key = reRead === null || reRead === undefined ? version : `${version} re-read by ${reRead}`;
    const at = call.ingestedAt === null ? '?' : new Date(call.ingestedAt).toISOString();
    copies.set(key, [...(copies.get(key) ?? []), at]);
  }
  const duplicated = finding();
  for (const [key, at] of copies)
    for (let i = 1; i < at.length; i++) note(duplicated, `${key} (encoded at ${at.join(', ')})`);
  return { duplicated, versions: versions.size };
}

/**
 * Per backfill signal, each call of its location whose current version (the truth after the run) lies in its
 * range [since, until) and that no record re-read by that signal carries. Such a version was current from before
 * `until`, which is no later than the signal's acceptance, to the end: the backfill's listing of the range had to
 * return it. Also counts the re-read records.
 */
export function findReReadGaps(
  truth: ReadonlyMap<string, readonly TruthCall[]>,
  records: readonly PublishedRecord[],
  backfills: readonly Backfill[],
): { missing: Finding; reReads: number } {
  const reRead = new Set<string>();
  let reReads = 0;
  for (const record of records) {
    if (record.reRead === null || record.reRead === undefined) continue;
    reReads++;
    reRead.add(`${record.reRead} ${publishedVersion(record.call)}`);
  }
  const missing = finding();
  for (const backfill of backfills) {
    const since = Date.parse(backfill.since);
    const until = Date.parse(backfill.until);
    for (const call of truth.get(backfill.location) ?? []) {
      const at = Date.parse(call.updatedAt);
      if (at < since || at >= until) continue;
      const key = versionKey(call.uid, at);
      if (!reRead.has(`${backfill.id} ${key}`)) note(missing, `${key} (backfill ${backfill.id})`);
    }
  }
  return { missing, reReads };
}

/**
 * Per uid, in each partition's offset order, a version older than one published before it: a consumer that
 * keeps the latest record per key would end on a stale version. An equal version is a duplicate, not this.
 */
export function findRegressions(records: readonly PublishedRecord[]): Finding {
  const ordered = [...records].sort((a, b) => a.partition - b.partition || a.offset - b.offset);
  const newest = new Map<string, { ms: number; iso: string; offset: number }>();
  const regressions = finding();
  for (const { partition, offset, call } of ordered) {
    const id = `${partition}/${call.uid}`;
    const ms = Date.parse(call.updatedAtIso);
    const before = newest.get(id);
    if (before !== undefined && ms < before.ms)
      note(
        regressions,
        `${call.uid}: ${call.updatedAtIso} at partition ${partition} offset ${offset}, after ${before.iso} at offset ${before.offset}`,
      );
    else newest.set(id, { ms, iso: call.updatedAtIso, offset });
  }
  return regressions;
}

/** What the witness read of one topic: each partition and how far. */
export interface TopicRead {
  topic: string;
  partitions: readonly PartitionRead[];
}

/** Partitions the witness did not read to their end: what they hold was never judged. */
export function findUnreadPartitions(reads: readonly TopicRead[]): Finding {
  const unread = finding();
  for (const { topic, partitions } of reads)
    for (const p of partitions)
      if (!p.reachedEnd)
        note(
          unread,
          `${topic} partition ${p.partition}: read to ${p.position} of ${p.high} (last stable offset ${p.lastStable})`,
        );
  return unread;
}

/**
 * After the run settled, every location's stored offset is at its end: no cursor and no history lane left,
 * the watermark the newest updatedAt of its truth, and no record of the location published beyond it.
 * offsets: the last stored value per key (`<connector name>/<location>`), null for a tombstone.
 */
export function findOffsetViolations(
  truth: ReadonlyMap<string, readonly TruthCall[]>,
  offsets: ReadonlyMap<string, StoredOffset | null>,
  records: readonly PublishedRecord[],
  connectorName: string,
): Finding {
  const newestPublished = new Map<string, number>();
  for (const { call } of records)
    newestPublished.set(
      call.locationUid,
      Math.max(newestPublished.get(call.locationUid) ?? 0, Date.parse(call.updatedAtIso)),
    );
  const violations = finding();
  for (const [location, calls] of truth) {
    const offset = offsets.get(`${connectorName}/${location}`);
    const newest = calls.length === 0 ? null : Math.max(...calls.map((c) => Date.parse(c.updatedAt)));
    if (offset === undefined || offset === null) {
      if (newest !== null) note(violations, `${location}: no stored offset`);
      continue;
    }
    if (offset.history !== undefined && offset.history !== null)
      note(violations, `${location}: its history lane is still stored after the run settled`);
    const watermark = offset.watermark ? Date.parse(offset.watermark) : null;
    if (offset.cursor !== null && offset.cursor !== undefined)
      note(violations, `${location}: a cursor is still stored after the run settled`);
    if (watermark !== newest)
      note(violations, `${location}: watermark ${offset.watermark} is not the newest updatedAt`);
    const newestOut = newestPublished.get(location);
    if (newestOut !== undefined && watermark !== null && newestOut > watermark)
      note(violations, `${location}: a record newer than the stored watermark was published`);
  }
  return violations;
}
