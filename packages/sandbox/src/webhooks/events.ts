/**
 * The `call.*` events the sandbox sends. Spec 6 shows only that they exist and carry the call's uid (and that
 * phone numbers are null in them), so the shape is the sandbox's choice, the connector's default mapping:
 * `{type, timestamp, data: {uid, locationUid?, locationPhoneNumber: null, customerPhoneNumber: null}}`.
 * `includeLocation: false` leaves `locationUid` out, as the real API may.
 */
export type CallEventType = 'call.created' | 'call.updated' | 'call.deleted';

export interface CallEvent {
  type: CallEventType;
  /** When the change happened (sandbox clock), ISO-8601. */
  timestamp: string;
  data: {
    uid: string;
    locationUid?: string;
    locationPhoneNumber: null;
    customerPhoneNumber: null;
  };
}

export function callEvent(
  type: CallEventType,
  call: { uid: string; locationUid: string },
  atMs: number,
  includeLocation: boolean,
): CallEvent {
  return {
    type,
    timestamp: new Date(atMs).toISOString(),
    data: {
      uid: call.uid,
      ...(includeLocation && { locationUid: call.locationUid }),
      locationPhoneNumber: null,
      customerPhoneNumber: null,
    },
  };
}
