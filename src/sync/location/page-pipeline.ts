/**
 * The page pipeline: what one listed page becomes before its commit. Pure over plain data, apart from the
 * enricher call (`preparePage`):
 *
 *   listed items ─mapPage─► entries ─applyPage (boundary dedupe, traversal.ts)─► accepted
 *                ─enrich (enricher.ts)─► enriched ─assemblePage (privacy, tombstones, dead letters)─► records
 *
 * `preparePage` is the part a read-ahead may run early (read-ahead.ts): it depends only on the offset the
 * page starts from. `assemblePage` runs when the page's turn comes. Logging and metrics are the caller's
 * (location-sync.ts, location-counters.ts): this returns what they need.
 */
import type { SkippableError } from '../../errors/index.js';
import type { EnrichedItem, Enricher, UnenrichedReason } from './enricher.js';
import type { BoundaryFingerprints } from './fingerprint.js';
import type { Call, DeadLetter, ListedCall, LocationOffset, MappedItem, PrivacyPolicy } from '../model.js';
import type { ListedPage, RequestHint } from '../ports.js';
import { applyPrivacy, completeCall } from './privacy.js';
import { historyRange } from '../lanes/lanes.js';
import { applyPage, type PageOutcome } from './traversal.js';

export interface PipelineSettings {
  locationUid: string;
  boundaryCap: number;
  /** Bytes the boundary may take in the stored offset (LocationSyncSettings.boundaryMaxBytes). */
  boundaryMaxBytes?: number;
  privacy: PrivacyPolicy;
  fingerprints: BoundaryFingerprints;
  /** A call GET reports gone: a tombstone instead of the unenriched record (kafka.tombstoneGoneCalls). */
  tombstoneGone?: boolean;
  /**
   * A history lane's page (lanes.ts): T0. Entries at or after it are the live lane's (left out), and a page
   * that reaches it ends the lane's traversal whatever its nextCursor.
   */
  until?: string;
}

/** Page entries in listing order: mapped calls and rejected items, with positions where known. */
export interface PageEntry {
  uid: string;
  updatedAt: string;
  fingerprint: string;
  call: ListedCall | null;
  deadLetter: DeadLetter | null;
}

/** A listed page mapped, deduplicated against its starting offset and enriched: all it needs to commit. */
export interface PreparedPage {
  /** Dead letters of items without a usable uid or updatedAt (no place in the listing's order). */
  unplaced: DeadLetter[];
  outcome: PageOutcome<PageEntry>;
  enriched: EnrichedItem[];
  /** Entries of a history page at or after T0, left to the live lane (0 for a live page). */
  leftToLive: number;
}

/** What one committed (or idle) page did, for the counters (location-counters.ts). */
export interface PageTally {
  published: number;
  /** The updatedAt of each published call (the freshness figure: its delay to the commit). */
  updatedAt: readonly string[];
  deadLetters: readonly DeadLetter[];
  deduplicated: number;
  redacted: number;
  belowWatermark: number;
  unenriched: ReadonlyMap<UnenrichedReason, number>;
  /** Calls of a history page dropped because the live lane published a newer version (live-window.ts). */
  supersededByLive: number;
}

/** A call published unenriched, for the log line that names a few. */
export interface UnenrichedExample {
  uid: string;
  reason: UnenrichedReason;
  detail: string;
}

/** What a prepared page publishes, and the tallies its metrics and log lines need. */
export interface AssembledPage {
  calls: Call[];
  deadLetters: DeadLetter[];
  /** uids published as tombstones (gone, with tombstoneGone). */
  tombstones: string[];
  redacted: number;
  unenriched: Map<UnenrichedReason, number>;
  /** At most five of them. */
  unenrichedExamples: UnenrichedExample[];
}

/** Maps, deduplicates (from `from`) and enriches a listed page: the work before its commit. */
export async function preparePage(
  from: LocationOffset,
  page: ListedPage,
  settings: PipelineSettings,
  enricher: Enricher,
  signal?: AbortSignal,
  hint?: RequestHint,
): Promise<PreparedPage> {
  const mapped = mapPage(page.items, settings);
  const { unplaced } = mapped;
  let { entries } = mapped;
  let { nextCursor } = page;
  let leftToLive = 0;
  if (settings.until !== undefined) {
    const range = historyRange(entries, settings.until);
    entries = range.below;
    leftToLive = range.leftToLive;
    if (range.reached) nextCursor = null;
  }
  const outcome = applyPage(from, entries, nextCursor, settings.boundaryCap, settings.boundaryMaxBytes);
  const acceptedCalls = outcome.accepted.flatMap((e) => (e.call === null ? [] : [e.call]));
  const enriched = await enricher.enrich(acceptedCalls, signal, hint);
  return { unplaced, outcome, enriched, leftToLive };
}

/** Splits mapped items into positioned entries (calls and rejected items with a place) and unplaced dead letters. */
export function mapPage(
  items: readonly MappedItem[],
  settings: Pick<PipelineSettings, 'locationUid' | 'fingerprints'>,
): { entries: PageEntry[]; unplaced: DeadLetter[] } {
  const entries: PageEntry[] = [];
  const unplaced: DeadLetter[] = [];
  const deadLetter = (error: SkippableError, payload: string, uid: string | null): DeadLetter => ({
    locationUid: settings.locationUid,
    uid,
    code: error.code,
    message: error.message,
    payload,
  });
  for (const mapped of items) {
    if (mapped.ok)
      entries.push({
        uid: mapped.call.uid,
        updatedAt: mapped.call.updatedAt,
        fingerprint: settings.fingerprints.fields(mapped.call),
        call: mapped.call,
        deadLetter: null,
      });
    else if (mapped.position === null) unplaced.push(deadLetter(mapped.error, mapped.payload, null));
    else
      entries.push({
        ...mapped.position,
        fingerprint: settings.fingerprints.text(mapped.payload),
        call: null,
        deadLetter: deadLetter(mapped.error, mapped.payload, mapped.position.uid),
      });
  }
  return { entries, unplaced };
}

/**
 * The records of a prepared page: every enriched call completed and passed through the privacy policy
 * (unknown privacy = private, so an unenriched call is redacted), or a tombstone for a call gone when so
 * configured; the dead letters of rejected items in listing order, then the unplaced ones.
 */
export function assemblePage(
  prepared: PreparedPage,
  settings: Pick<PipelineSettings, 'privacy' | 'tombstoneGone'>,
): AssembledPage {
  const { outcome, enriched, unplaced } = prepared;
  const calls: Call[] = [];
  const tombstones: string[] = [];
  let redacted = 0;
  const unenriched = new Map<UnenrichedReason, number>();
  const unenrichedExamples: UnenrichedExample[] = [];
  for (const item of enriched) {
    if (item.unenriched !== null) {
      const { reason, detail } = item.unenriched;
      unenriched.set(reason, (unenriched.get(reason) ?? 0) + 1);
      if (unenrichedExamples.length < 5) unenrichedExamples.push({ uid: item.listed.uid, reason, detail });
    }
    if (item.unenriched?.reason === 'gone' && settings.tombstoneGone === true) {
      tombstones.push(item.listed.uid);
      continue;
    }
    const call = applyPrivacy(completeCall(item.listed, item.enrichment), settings.privacy);
    if (call.customerPhoneNumberRedacted) redacted += 1;
    calls.push(call);
  }
  const deadLetters = [
    ...outcome.accepted.flatMap((e) => (e.deadLetter === null ? [] : [e.deadLetter])),
    ...unplaced,
  ];
  return { calls, deadLetters, tombstones, redacted, unenriched, unenrichedExamples };
}

/**
 * The tally of a page: what it published, dead-lettered, skipped at the boundary, redacted, and (a history
 * page) dropped for a newer version the live lane published.
 */
export function pageTally(prepared: PreparedPage, page: AssembledPage, supersededByLive = 0): PageTally {
  return {
    supersededByLive,
    published: page.calls.length,
    updatedAt: page.calls.map((call) => call.updatedAt),
    deadLetters: page.deadLetters,
    deduplicated: prepared.outcome.duplicates.length,
    redacted: page.redacted,
    belowWatermark: prepared.outcome.belowWatermark.length,
    unenriched: page.unenriched,
  };
}
