/** The Avro codec without a registry: the schema file, logical types, framing and rejection. */
import avro from 'avsc';
import { describe, expect, it } from 'vitest';
import {
  CallCodec,
  callValueType,
  frameConfluent,
  type CallCodecOptions,
  type SchemaRegistryClient,
} from '../../../../src/kafka/avro/call-codec.js';
import { CALL_VALUE_SCHEMA_FILE, loadSchema } from '../../../../src/kafka/avro/schema-files.js';
import { SkippableError } from '../../../../src/errors/index.js';
import type { Call } from '../../../../src/sync/model.js';
import { thrown } from '../../../support/auth/thrown.js';
import { clockReading } from '../../../support/clock.js';

const call: Call = {
  uid: 'call-1',
  locationUid: '00000000-0000-4000-8000-000000000001',
  updatedAt: '2024-05-01T10:00:00.123456Z',
  locationPhoneNumber: '+15550100',
  customerPhoneNumber: null,
  startedAt: '2024-05-01T09:58:00Z',
  endedAt: null,
  isPrivate: true,
  conversationUid: null,
  enriched: true,
  customerPhoneNumberRedacted: true,
};

/** A registry stand-in that knows every schema under one id: CallCodec only looks ids up at start. */
function registryWithId(id: number): SchemaRegistryClient {
  return {
    getRegistryIdBySchema: async () => id,
    register: async () => {
      throw new Error('not expected: the schema is known');
    },
  };
}

/** A codec for topic `calls` of connector c1 whose schemas have id `id`. */
async function codecWith(id: number, options: Partial<CallCodecOptions> = {}): Promise<CallCodec> {
  return CallCodec.create({
    registry: registryWithId(id),
    topic: 'calls',
    keyFormat: 'string',
    connectorName: 'c1',
    ...options,
  });
}

describe('call.avsc', () => {
  it('is a namespaced record whose every field is documented and whose optional fields are null-first unions with a null default', () => {
    const schema = loadSchema(CALL_VALUE_SCHEMA_FILE) as {
      name: string;
      namespace: string;
      fields: { name: string; doc?: string; type: unknown; default?: unknown }[];
    };
    expect(`${schema.namespace}.${schema.name}`).toBe('com.callsconnector.Call');
    for (const field of schema.fields) {
      expect(field.doc, field.name).toBeTruthy();
      if (Array.isArray(field.type)) {
        expect(field.type[0], field.name).toBe('null');
        expect(field.default, field.name).toBeNull();
      }
    }
    const updatedAt = schema.fields.find((f) => f.name === 'updatedAt');
    expect(updatedAt?.type).toEqual({ type: 'long', logicalType: 'timestamp-micros' });
  });
});

describe('CallCodec', () => {
  it('frames values in the Confluent wire format with the registered schema id and decodes them back to the call', async () => {
    const codec = await codecWith(42, { clock: clockReading(() => 1_700_000_000_000) });
    const value = codec.encodeValue(call);

    expect(value.readUInt8(0)).toBe(0);
    expect(value.readInt32BE(1)).toBe(42);
    expect(codec.decodeValue(value)).toEqual({
      ...call,
      updatedAtIso: call.updatedAt,
      startedAt: '2024-05-01T09:58:00.000000Z',
      connectorName: 'c1',
      ingestedAt: 1_700_000_000_000,
    });
    expect(codec.encodeKey(call)).toBe('call-1');
  });

  it('stores updatedAt as microseconds readable by a plain Avro reader', async () => {
    const codec = await codecWith(1);
    const plain = avro.Type.forSchema(loadSchema(CALL_VALUE_SCHEMA_FILE));
    const decoded = plain.fromBuffer(codec.encodeValue(call).subarray(5)) as { updatedAt: number };
    expect(decoded.updatedAt).toBe(Date.UTC(2024, 4, 1, 10) * 1000 + 123_456);
  });

  it('encodes Avro keys as CallKey records in the wire format when keyFormat is avro', async () => {
    const codec = await codecWith(7, { keyFormat: 'avro' });
    const key = codec.encodeKey(call);
    expect(Buffer.isBuffer(key)).toBe(true);
    expect((key as Buffer).readInt32BE(1)).toBe(7);
    expect(
      avro.Type.forSchema({
        type: 'record',
        name: 'K',
        fields: [{ name: 'uid', type: 'string' }],
      }).fromBuffer((key as Buffer).subarray(5)),
    ).toEqual({ uid: 'call-1' });
  });

  it('rejects a call the schema cannot hold with a skippable ITEM_SCHEMA_REJECTED naming the field', async () => {
    const codec = await codecWith(1);
    let thrown: unknown;
    try {
      codec.encodeValue({ ...call, endedAt: 'not a time' });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(SkippableError);
    expect((thrown as SkippableError).code).toBe('ITEM_SCHEMA_REJECTED');
    expect((thrown as SkippableError).message).toContain('endedAt');
  });

  it('frames any body behind magic byte 0 and a big-endian id', () => {
    expect([...frameConfluent(0x01020304, Buffer.from([9, 8]))]).toEqual([0, 1, 2, 3, 4, 9, 8]);
    expect(callValueType().name).toBe('com.callsconnector.Call');
  });
});

describe('CallCodec size limit', () => {
  it('rejects a call whose value exceeds maxValueBytes with a skippable ITEM_TOO_LARGE', async () => {
    const codec = await codecWith(1, { maxValueBytes: 1000 });
    expect(codec.encodeValue(call).length).toBeLessThan(1000);
    const error = thrown(() => codec.encodeValue({ ...call, locationPhoneNumber: 'x'.repeat(2000) }));
    expect(error).toBeInstanceOf(SkippableError);
    expect((error as SkippableError).code).toBe('ITEM_TOO_LARGE');
  });
});
