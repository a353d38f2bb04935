import { describe, expect, it } from 'vitest';
import {
  cursorProblem,
  deadLetterPayload,
  mapEnrichment,
  MAX_CURSOR_LENGTH,
  MAX_UID_LENGTH,
  mapListedItem,
} from '../../../src/api/call-mapper.js';

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
      '{"uid":"x","omittedFields":1}',
    );
  });

  it('refuses a uid longer than the cap without repeating it, as an unpositioned dead letter', () => {
    const uid = 'u'.repeat(1_000_000);
    const mapped = mapListedItem({ ...item, uid }, LOC);
    expect(mapped).toMatchObject({ ok: false, position: null, error: { code: 'ITEM_UID_TOO_LONG' } });
    expect(!mapped.ok && mapped.error.message.length).toBeLessThan(200);
    expect(!mapped.ok && mapped.payload.length).toBeLessThan(1_000);
    expect(mapListedItem({ ...item, uid: 'u'.repeat(MAX_UID_LENGTH) }, LOC).ok).toBe(true);
  });
});

describe('cursorProblem', () => {
  it('accepts a cursor up to the cap and names one longer', () => {
    expect(cursorProblem('c'.repeat(MAX_CURSOR_LENGTH))).toBeNull();
    expect(cursorProblem('c'.repeat(MAX_CURSOR_LENGTH + 1))).toMatch(/4097 characters/);
  });
});

describe('deadLetterPayload', () => {
  const nested = (depth: number): unknown[] => {
    const root: unknown[] = [];
    let level = root;
    for (let i = 0; i < depth; i++) {
      const next: unknown[] = [];
      level.push(next);
      level = next;
    }
    return root;
  };

  it('never throws, whatever the item: deep nesting, a throwing getter, a symbol, a bigint', () => {
    const deep = nested(10_000);
    const hostile = Object.defineProperty({ uid: 'c1' }, 'updatedAt', {
      enumerable: true,
      get() {
        throw new Error('boom');
      },
    });
    for (const raw of [deep, { ...item, locationUid: deep }, { uid: deep }, hostile, Symbol('s'), 10n]) {
      expect(() => deadLetterPayload(raw)).not.toThrow();
      expect(() => JSON.parse(deadLetterPayload(raw)) as unknown).not.toThrow();
    }
    expect(JSON.parse(deadLetterPayload({ ...item, locationUid: deep }))).toMatchObject({
      locationUid: { type: 'array' },
    });
  });

  it('keeps only the spec fields as scalars: no case variants, nested phones, arrays or free text', () => {
    const payload = deadLetterPayload({
      ...item,
      CustomerPhoneNumber: '+15550003',
      customer: { phoneNumber: '+15550004' },
      contacts: ['+15550005'],
      notes: 'called +15550006 about the invoice',
      conversationUid: { phone: '+15550007' },
      locationUid: ['+15550008'],
    });
    for (const number of [
      '+15550002',
      '+15550003',
      '+15550004',
      '+15550005',
      '+15550006',
      '+15550007',
      '+15550008',
    ])
      expect(payload).not.toContain(number);
    expect(JSON.parse(payload)).toEqual({
      uid: 'c1',
      updatedAt: item.updatedAt,
      locationPhoneNumber: '+15550001',
      startedAt: null,
      endedAt: null,
      isPrivate: null,
      conversationUid: { type: 'object' },
      locationUid: { type: 'array' },
      omittedFields: 5,
    });
  });

  it('stays small whatever the item holds: long strings are cut, with their length', () => {
    const payload = deadLetterPayload({ uid: 'x'.repeat(1_000_000), updatedAt: 'y'.repeat(100_000) });
    expect(payload.length).toBeLessThan(3_000);
    expect(JSON.parse(payload)).toMatchObject({ uid: { length: 1_000_000 }, updatedAt: { length: 100_000 } });
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
