/**
 * Smoke: the registry is a real Confluent-compatible registry. @kafkajs/confluent-schema-registry
 * registers an Avro schema, encodes a record in the Confluent wire format (magic byte 0, then the
 * 4-byte big-endian schema id the registry resolves), and decodes it back.
 */
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import { describe, expect, it } from 'vitest';
import { stackEndpoints, uniqueName } from '../../support/stack.js';

const schema = {
  type: 'record',
  name: 'SmokeCall',
  namespace: 'com.callsconnector.smoke',
  fields: [
    { name: 'uid', type: 'string' },
    { name: 'durationSeconds', type: ['null', 'int'], default: null },
  ],
};

describe('schema registry', () => {
  it('registers an Avro schema, and encodes and decodes a record in the Confluent wire format', async () => {
    const { registryUrl } = stackEndpoints();
    const registry = new SchemaRegistry({ host: registryUrl });
    const subject = `${uniqueName('smoke-topic')}-value`;

    const { id } = await registry.register(
      { type: SchemaType.AVRO, schema: JSON.stringify(schema) },
      { subject },
    );
    const record = { uid: 'call-1', durationSeconds: 42 };
    const encoded = await registry.encode(id, record);

    expect(encoded.readUInt8(0)).toBe(0);
    expect(encoded.readInt32BE(1)).toBe(id);
    // The id in the frame is one the registry itself resolves to our schema (no client cache involved).
    const response = await fetch(`${registryUrl}/schemas/ids/${id}`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { schema: string };
    expect(JSON.parse(body.schema)).toMatchObject({
      name: 'SmokeCall',
      namespace: 'com.callsconnector.smoke',
    });

    const fresh = new SchemaRegistry({ host: registryUrl });
    expect(await fresh.decode(encoded)).toEqual(record);
  });
});
