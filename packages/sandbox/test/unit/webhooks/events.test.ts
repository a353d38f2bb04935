import { describe, expect, it } from 'vitest';
import { callEvent } from '../../../src/webhooks/events.js';

const call = { uid: 'c1', locationUid: 'L1' };

describe('call.* events', () => {
  it('carry the type, the time of the change and the uid and location, with null phone numbers (spec 6)', () => {
    expect(callEvent('call.updated', call, Date.UTC(2026, 0, 2, 3, 4, 5), true)).toEqual({
      type: 'call.updated',
      timestamp: '2026-01-02T03:04:05.000Z',
      data: { uid: 'c1', locationUid: 'L1', locationPhoneNumber: null, customerPhoneNumber: null },
    });
  });

  it('leave the location out when the sandbox is told to, as the real API may', () => {
    expect(callEvent('call.created', call, 0, false).data).not.toHaveProperty('locationUid');
  });
});
