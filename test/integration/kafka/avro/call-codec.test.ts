/** The codec against the real registry: registration, reuse, Avro keys, and an incompatible subject. */
import { COMPATIBILITY, SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import { describe, expect, it } from 'vitest';
import { FatalError } from '../../../../src/errors/index.js';
import { CallCodec } from '../../../../src/kafka/avro/call-codec.js';
import { sampleCall } from '../../../support/calls.js';
import { rejectionOf } from '../../../support/rejection.js';
import { stackEndpoints, uniqueName } from '../../../support/stack.js';

function registry(): SchemaRegistry {
  return new SchemaRegistry({ host: stackEndpoints().registryUrl });
}

function createCodec(topic: string): Promise<CallCodec> {
  return CallCodec.create({ registry: registry(), topic, keyFormat: 'string', connectorName: 'c' });
}

interface AvroField {
  name: string;
  type: unknown;
  default?: unknown;
  doc?: string;
}

/** The latest schema under `subject` as the registry serves it to consumers (GET /subjects/{s}/versions/latest). */
async function registeredSchema(subject: string): Promise<{ doc?: string; fields: AvroField[] }> {
  const response = await fetch(`${stackEndpoints().registryUrl}/subjects/${subject}/versions/latest`);
  expect(response.status).toBe(200);
  const body = (await response.json()) as { schema: string };
  return JSON.parse(body.schema) as { doc?: string; fields: AvroField[] };
}

describe('CallCodec with the schema registry', () => {
  it('registers <topic>-value on first start and finds the same schema id on the next', async () => {
    const topic = uniqueName('calls');
    const first = await createCodec(topic);
    const second = await createCodec(topic);

    expect(second.valueSchemaId).toBe(first.valueSchemaId);
    expect(await registry().getLatestSchemaId(`${topic}-value`)).toBe(first.valueSchemaId);
  });

  it('lets instances that start together register a new subject at the same time, all with one schema id', async () => {
    // Replicas of a distributed deployment start together: the losers of the race to create the subject
    // find it created by another (Apicurio answers its compatibility NONE until the rule is set).
    const topic = uniqueName('calls');
    const codecs = await Promise.all(Array.from({ length: 4 }, () => createCodec(topic)));
    expect(new Set(codecs.map((c) => c.valueSchemaId)).size).toBe(1);
    expect(await registry().getLatestSchemaId(`${topic}-value`)).toBe(codecs[0]?.valueSchemaId);
  });

  it('registers the schema as shipped: logical types, defaults and docs come back from the registry', async () => {
    const topic = uniqueName('calls');
    await createCodec(topic);

    const registered = await registeredSchema(`${topic}-value`);
    const field = (name: string): AvroField => {
      const found = registered.fields.find((f) => f.name === name);
      if (found === undefined) throw new Error(`field ${name} missing from the registered schema`);
      return found;
    };
    expect(registered.doc).toEqual(expect.stringContaining('One version of a phone call'));
    expect(field('updatedAt').type).toEqual({ type: 'long', logicalType: 'timestamp-micros' });
    expect(field('ingestedAt').type).toEqual(['null', { type: 'long', logicalType: 'timestamp-millis' }]);
    expect(field('startedAt').type).toEqual(['null', { type: 'long', logicalType: 'timestamp-micros' }]);
    expect(field('customerPhoneNumber').default).toBeNull();
    expect(field('customerPhoneNumber').doc).toContain('privacy policy');
    expect(field('enriched').default).toBe(false);
    expect(field('customerPhoneNumberRedacted').default).toBe(true);
  });

  it('accepts a next version that adds an optional field under BACKWARD compatibility', async () => {
    const topic = uniqueName('calls');
    const first = await createCodec(topic);
    const current = await registeredSchema(`${topic}-value`);
    const next = {
      ...current,
      fields: [...current.fields, { name: 'recordingUrl', type: ['null', 'string'], default: null }],
    };

    const { id } = await registry().register(
      { type: SchemaType.AVRO, schema: JSON.stringify(next) },
      { subject: `${topic}-value`, compatibility: COMPATIBILITY.BACKWARD },
    );
    expect(id).not.toBe(first.valueSchemaId);
    expect(await registry().getLatestSchemaId(`${topic}-value`)).toBe(id);
  });

  it('with keyFormat avro registers <topic>-key and writes keys the registry decodes to the uid', async () => {
    const topic = uniqueName('calls');
    const codec = await CallCodec.create({
      registry: registry(),
      topic,
      keyFormat: 'avro',
      connectorName: 'c',
    });
    const call = sampleCall();

    const key = codec.encodeKey(call);
    expect(Buffer.isBuffer(key)).toBe(true);
    expect(await registry().decode(key as Buffer)).toEqual({ uid: call.uid });
    expect((key as Buffer).readInt32BE(1)).toBe(await registry().getLatestSchemaId(`${topic}-key`));
  });

  it('refuses to start with a fatal error when the subject holds an incompatible schema', async () => {
    const topic = uniqueName('calls');
    const incompatible = {
      type: 'record',
      name: 'Call',
      namespace: 'com.callsconnector',
      fields: [{ name: 'uid', type: 'long' }],
    };
    await registry().register(
      { type: SchemaType.AVRO, schema: JSON.stringify(incompatible) },
      { subject: `${topic}-value` },
    );

    const error = await rejectionOf(createCodec(topic));
    expect(error).toBeInstanceOf(FatalError);
    expect((error as FatalError).code).toBe('SCHEMA_REGISTRY_REFUSED');
    expect((error as FatalError).message).toContain(`${topic}-value`);
  });
});
