/** A minimal listable call record for index and page tests: only uid and updatedAt matter there. */
import type { CallRecord } from '../../src/data/call-record.js';

export function callRecord(uid: string, updatedAtMs: number): CallRecord {
  return {
    uid,
    locationUid: 'loc',
    updatedAtMs,
    locationPhoneNumber: '+1',
    customerPhoneNumber: '+2',
    startedAtMs: 0,
    endedAtMs: 0,
    isPrivate: false,
    conversationUid: null,
    thirdParty: false,
    representable: true,
  };
}
