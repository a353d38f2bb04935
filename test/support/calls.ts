/** Sample Call values for tests. */
import { randomUUID } from 'node:crypto';
import type { Call } from '../../src/sync/model.js';

let callCounter = 0;

/** A valid, enriched, public call; override what the test is about. */
export function sampleCall(overrides: Partial<Call> = {}): Call {
  callCounter += 1;
  return {
    uid: `call-${callCounter}-${randomUUID()}`,
    locationUid: '00000000-0000-4000-8000-000000000001',
    updatedAt: '2024-05-01T10:00:00.123456Z',
    locationPhoneNumber: '+15550100',
    customerPhoneNumber: '+15550199',
    startedAt: '2024-05-01T09:58:00Z',
    endedAt: '2024-05-01T09:59:30.5Z',
    isPrivate: false,
    conversationUid: 'conv-1',
    enriched: true,
    customerPhoneNumberRedacted: false,
    ...overrides,
  };
}
