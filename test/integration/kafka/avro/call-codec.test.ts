/** The codec against the real registry: registration, reuse, Avro keys, and an incompatible subject. */
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import { describe, expect, it } from 'vitest';
import { FatalError } from '../../../../src/errors/index.js';
import { CallCodec } from '../../../../src/kafka/avro/call-codec.js';
import { sampleCall } from '../../../support/calls.js';
import { rejectionOf } from '../../../support/rejection.js';
import { stackEndpoints, uniqueName } from '../../../support/stack.js';

function registry(): SchemaRegistry {
  return new SchemaRegistry({ host: stackEndpoints().registryUrl });
}

describe('CallCodec with the schema registry', () => {
  it('registers <topic>-value on first start and finds the same schema id on the next', async () => {
    const topic = uniqueName('calls');
    const first = await CallCodec.create({
      registry: registry(),
      topic,
      keyFormat: 'string',
      connectorName: 'c',
    });
    const second = await CallCodec.create({
      registry: registry(),
      topic,
      keyFormat: 'string',
      connectorName: 'c',
    });

    expect(second.valueSchemaId).toBe(first.valueSchemaId);
    expect(await registry().getLatestSchemaId(`${topic}-value`)).toBe(first.valueSchemaId);
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

    const error = await rejectionOf(
      CallCodec.create({ registry: registry(), topic, keyFormat: 'string', connectorName: 'c' }),
    );
    expect(error).toBeInstanceOf(FatalError);
    expect((error as FatalError).code).toBe('SCHEMA_REGISTRY_REFUSED');
    expect((error as FatalError).message).toContain(`${topic}-value`);
  });
});
