import { describe, expect, it } from 'vitest';
import { deadLetterPayload, mapEnrichment, mapListedItem } from '../../../src/api/call-mapper.js';

const LOC = '11111111-1111-1111-1111-111111111111';
const item = {
  uid: 'c1',
  updatedAt: '2024-03-01T12:00:00.123456Z',
  locationPhoneNumber: '+15550001',
  customerPhoneNumber: '+15550002',
  startedAt: null,
  endedAt: null,
  isPrivate: null,
  conversationUid: null,
};

describe('mapListedItem', () => {
  it('keeps the spec fields, the traversal location and the exact updatedAt string', () => {
    expect(mapListedItem(item, LOC)).toEqual({
      ok: true,
      call: { ...item, locationUid: LOC },
    });
  });

  it('drops unknown extra fields', () => {
    const mapped = mapListedItem({ ...item, customerName: 'Ada', notes: 'secret' }, LOC);
    expect(mapped.ok && Object.keys(mapped.call).sort()).toEqual([
      'conversationUid',
      'customerPhoneNumber',
      'endedAt',
      'isPrivate',
      'locationPhoneNumber',
      'locationUid',
      'startedAt',
      'uid',
      'updatedAt',
    ]);
  });

  it('reads absent optional fields as null', () => {
    const mapped = mapListedItem({ uid: 'c1', updatedAt: item.updatedAt }, LOC);
    expect(mapped.ok && mapped.call.customerPhoneNumber).toBeNull();
  });

  it('rejects an item without uid as ITEM_NO_UID, with no position', () => {
    for (const bad of [
      { ...item, uid: undefined },
      { ...item, uid: null },
      { ...item, uid: '' },
      { ...item, uid: 42 },
    ]) {
      const mapped = mapListedItem(bad, LOC);
      expect(mapped).toMatchObject({ ok: false, position: null });
      expect(!mapped.ok && mapped.error.code).toBe('ITEM_NO_UID');
      expect(!mapped.ok && mapped.error.disposition).toBe('skippable');
    }
  });

  it('rejects a missing or unparsable updatedAt as ITEM_BAD_UPDATED_AT', () => {
    for (const updatedAt of [undefined, null, 'yesterday', 1709294400, '2024-03-01T12:00:00']) {
      const mapped = mapListedItem({ ...item, updatedAt }, LOC);
      expect(!mapped.ok && mapped.error.code, String(updatedAt)).toBe('ITEM_BAD_UPDATED_AT');
    }
  });

  it('rejects a field of a type the Avro schema refuses as ITEM_SCHEMA_REJECTED, keeping its position', () => {
    const cases = [
      { customerPhoneNumber: 15550002 },
      { locationPhoneNumber: {} },
      { isPrivate: 'no' },
      { startedAt: 'soon' },
      { conversationUid: 7 },
      { locationUid: 3 },
    ];
    for (const patch of cases) {
      const mapped = mapListedItem({ ...item, ...patch }, LOC);
      expect(mapped, JSON.stringify(patch)).toMatchObject({
        ok: false,
        position: { uid: 'c1', updatedAt: item.updatedAt },
      });
      expect(!mapped.ok && mapped.error.code).toBe('ITEM_SCHEMA_REJECTED');
    }
  });

  it('rejects a non-object item', () => {
    expect(mapListedItem('c1', LOC)).toMatchObject({ ok: false, position: null });
  });

  it('never puts the customer number into a dead-letter payload', () => {
    const mapped = mapListedItem({ ...item, isPrivate: 'no' }, LOC);
    expect(!mapped.ok && mapped.payload).not.toContain('+15550002');
    expect(deadLetterPayload({ uid: 'x', customerPhoneNumber: '+1555' })).toBe(
      '{"uid":"x","customerPhoneNumber":"[removed]"}',
    );
  });
});

describe('mapEnrichment', () => {
  it('takes the four enrichment fields and nothing else', () => {
    expect(
      mapEnrichment(
        {
          ...item,
          startedAt: '2024-03-01T11:58:00Z',
          endedAt: '2024-03-01T11:59:00Z',
          isPrivate: false,
          conversationUid: 'v1',
          extra: 1,
        },
        'c1',
      ),
    ).toEqual({
      ok: true,
      enrichment: {
        startedAt: '2024-03-01T11:58:00Z',
        endedAt: '2024-03-01T11:59:00Z',
        isPrivate: false,
        conversationUid: 'v1',
      },
    });
  });

  it('rejects a bad enrichment field as ITEM_SCHEMA_REJECTED', () => {
    const mapped = mapEnrichment({ isPrivate: 'yes' }, 'c1');
    expect(!mapped.ok && mapped.error.code).toBe('ITEM_SCHEMA_REJECTED');
  });
});
