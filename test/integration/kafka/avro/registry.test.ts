/**
 * schemaRegistry.caFile: the real registry behind an HTTPS endpoint whose certificate a private CA signed
 * (a TLS-terminating proxy in front of the stack's Apicurio, as a load balancer would be). With the CA file the
 * start-up probe passes and the registry client registers, encodes and decodes; without it the start-up check
 * names the problem and the key that fixes it.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SchemaType } from '@kafkajs/confluent-schema-registry';
import { generateSelfSigned } from '@calls-connector/self-signed';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpsDispatcher } from '../../../../src/https/dispatcher.js';
import { schemaRegistrySchema } from '../../../../src/config/schema.js';
import { FatalError } from '../../../../src/errors/index.js';
import { createSchemaRegistry, readRegistryCaFile } from '../../../../src/kafka/avro/registry.js';
import { verifySchemaRegistry } from '../../../../src/runtime/preflight.js';
import { rejectionOf } from '../../../support/rejection.js';
import { stackEndpoints, uniqueName } from '../../../support/stack.js';

let proxy: Server;
let httpsUrl: string;
let caFile: string;
let proxied = 0;

beforeAll(async () => {
  const upstream = new URL(stackEndpoints().registryUrl);
  const pair = await generateSelfSigned({
    commonName: 'registry test CA',
    hosts: ['127.0.0.1'],
    validityMs: 3_600_000,
    ca: true,
  });
  caFile = join(await mkdtemp(join(tmpdir(), 'registry-ca-')), 'ca.pem');
  await writeFile(caFile, pair.cert);
  proxy = createServer({ cert: pair.cert, key: pair.key }, (req, res) => {
    proxied++;
    const forward = httpRequest(
      {
        host: upstream.hostname,
        port: upstream.port,
        path: req.url,
        method: req.method,
        headers: req.headers,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  httpsUrl = `https://127.0.0.1:${(proxy.address() as AddressInfo).port}${upstream.pathname}`;
});

afterAll(async () => {
  proxy.closeAllConnections();
  await new Promise((resolve) => proxy.close(resolve));
});

describe('schemaRegistry.caFile', () => {
  it('lets the start-up check and the registry client reach an https registry whose CA it names', async () => {
    const config = schemaRegistrySchema.parse({ url: httpsUrl, caFile });
    const dispatcher = createHttpsDispatcher({ extraCaPem: readRegistryCaFile(config) });
    const before = proxied;
    try {
      await verifySchemaRegistry({ url: config.url, dispatcher });
    } finally {
      await dispatcher.close();
    }
    const registry = createSchemaRegistry(config, 'registry-ca-test');
    const schema = JSON.stringify({
      type: 'record',
      name: 'Probe',
      namespace: 'test.registry',
      fields: [{ name: 'uid', type: 'string' }],
    });
    const { id } = await registry.register(
      { type: SchemaType.AVRO, schema },
      { subject: uniqueName('registry-ca') },
    );
    const encoded = await registry.encode(id, { uid: 'call-1' });

    expect(await registry.decode(encoded)).toEqual({ uid: 'call-1' });
    expect(proxied - before).toBeGreaterThanOrEqual(2); // the probe and the client both went through TLS
  });

  it('without it, stops the start-up at the certificate and names schemaRegistry.caFile', async () => {
    const error = await rejectionOf(verifySchemaRegistry({ url: httpsUrl }));

    expect(error).toBeInstanceOf(FatalError);
    expect((error as FatalError).code).toBe('SCHEMA_REGISTRY_TLS_UNTRUSTED');
    expect((error as FatalError).message).toContain('schemaRegistry.caFile');
  });

  it('refuses a CA file it cannot read at start-up, naming the key', () => {
    const config = schemaRegistrySchema.parse({ url: httpsUrl, caFile: '/nonexistent/registry-ca.pem' });
    expect(() => createSchemaRegistry(config, 'registry-ca-test')).toThrow(/schemaRegistry\.caFile/);
  });
});
