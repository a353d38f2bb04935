import { describe, expect, it } from 'vitest';
import { mapPayload, type PayloadMapping } from '../../../src/webhooks/payload-mapping.js';

const mapping: PayloadMapping = {
  eventPath: 'type',
  eventPrefix: 'call.',
  uidPath: 'data.uid',
  locationPath: 'data.locationUid',
};
const map = (value: unknown, m = mapping) => mapPayload(m, Buffer.from(JSON.stringify(value)));

describe('payload mapping', () => {
  it('maps a call.* event to a nudge with its uid and location', () => {
    expect(map({ type: 'call.updated', data: { uid: 'c1', locationUid: 'L1' } })).toEqual({
      kind: 'nudge',
      nudge: { event: 'call.updated', uid: 'c1', location: 'L1' },
    });
  });

  it('gives a nudge without a location when the payload has none or a null one', () => {
    for (const data of [{ uid: 'c1' }, { uid: 'c1', locationUid: null }])
      expect(map({ type: 'call.created', data })).toMatchObject({ nudge: { location: null } });
  });

  it('acknowledges other events as ignored, whatever their shape', () => {
    expect(map({ type: 'review.created', data: 42 })).toEqual({ kind: 'ignored', event: 'review.created' });
    // The prefix is a prefix: "callback.x" is not a call event.
    expect(map({ type: 'callback.x' })).toMatchObject({ kind: 'ignored' });
  });

  it('reads other shapes through configured paths', () => {
    const other: PayloadMapping = {
      eventPath: 'event.name',
      eventPrefix: 'call.',
      uidPath: 'event.call.id',
      locationPath: 'event.call.location.id',
    };
    expect(
      map({ event: { name: 'call.deleted', call: { id: 'c9', location: { id: 'L9' } } } }, other),
    ).toEqual({
      kind: 'nudge',
      nudge: { event: 'call.deleted', uid: 'c9', location: 'L9' },
    });
  });

  it('calls a body malformed when it is not a JSON object or lacks an event name or a uid', () => {
    expect(mapPayload(mapping, Buffer.from('not json'))).toMatchObject({ kind: 'malformed' });
    for (const body of [[1], 'call.updated', { data: { uid: 'c1' } }, { type: 'call.updated', data: {} }])
      expect(map(body)).toMatchObject({ kind: 'malformed' });
  });

  it('refuses a uid or location that is not a short printable identifier', () => {
    for (const uid of [42, '', 'has space', 'x'.repeat(201)])
      expect(map({ type: 'call.updated', data: { uid } })).toMatchObject({ kind: 'malformed' });
    expect(map({ type: 'call.updated', data: { uid: 'c1', locationUid: { id: 'L1' } } })).toMatchObject({
      kind: 'malformed',
    });
  });

  it('does not read inherited properties as paths', () => {
    expect(
      map({ type: 'call.updated', data: { uid: 'c1' } }, { ...mapping, uidPath: 'data.constructor' }),
    ).toMatchObject({ kind: 'malformed' });
  });
});
