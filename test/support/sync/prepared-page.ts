/**
 * Listed calls and a prepared page (page-pipeline.ts PreparedPage) of them, unenriched, for tests of what a
 * lane keeps of a page: every call accepted, nothing deduplicated, the offset empty.
 */
import { EMPTY_OFFSET, type ListedCall } from '../../../src/sync/model.js';
import type { PreparedPage } from '../../../src/sync/location/page-pipeline.js';

/** A call as listed (before enrichment), every optional field null. */
export function listedCall(uid: string, updatedAt: string, locationUid = 'loc'): ListedCall {
  return {
    uid,
    locationUid,
    updatedAt,
    locationPhoneNumber: null,
    customerPhoneNumber: null,
    startedAt: null,
    endedAt: null,
    isPrivate: null,
    conversationUid: null,
  };
}

export function preparedPage(calls: readonly { uid: string; updatedAt: string }[]): PreparedPage {
  const listed = calls.map(({ uid, updatedAt }) => listedCall(uid, updatedAt));
  const entries = listed.map((call) => ({
    uid: call.uid,
    updatedAt: call.updatedAt,
    fingerprint: '',
    call,
    deadLetter: null,
  }));
  return {
    unplaced: [],
    outcome: { accepted: entries, duplicates: [], belowWatermark: [], offset: EMPTY_OFFSET, complete: false },
    enriched: listed.map((call) => ({ listed: call, enrichment: null, unenriched: null })),
    leftToLive: 0,
  };
}
