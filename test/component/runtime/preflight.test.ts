import { createServer, type Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { verifySchemaRegistry, waitForSchemaRegistry } from '../../../src/runtime/preflight.js';
import { freeLoopbackPort } from '../../../src/demo/free-port.js';
import { ConnectorError } from '../../../src/errors/index.js';
import { fakeRegistry, type FakeRegistry } from '../../support/registry.js';

async function failureOf(promise: Promise<unknown>): Promise<ConnectorError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof ConnectorError)) throw new Error(`expected a ConnectorError, got ${String(error)}`);
  return error;
}

/** The registry stand-ins answer their status here only (404 elsewhere). */
const SUBJECTS = '/apis/ccompat/v7/subjects';

describe('verifySchemaRegistry', () => {
  let server: FakeRegistry | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('accepts a registry whose subjects listing answers 200, sending userinfo as a Basic header', async () => {
    const registry = (server = await fakeRegistry(200, SUBJECTS));
    const url = registry.base.replace('http://', 'http://svc:pw@') + '/apis/ccompat/v7';
    await verifySchemaRegistry({ url });
    expect(registry.seen.map((r) => r.headers.authorization)).toEqual([
      `Basic ${Buffer.from('svc:pw').toString('base64')}`,
    ]);
  });

  it('says the URL path is wrong, with examples of right ones, when the registry answers 404', async () => {
    const registry = (server = await fakeRegistry(200, SUBJECTS));
    const error = await failureOf(
      verifySchemaRegistry({ url: `${registry.base.replace('http://', 'http://svc:pw-secret-7@')}/wrong` }),
    );
    expect(error.code).toBe('SCHEMA_REGISTRY_URL_WRONG');
    expect(error.message).toContain(
      `${registry.base}/wrong is not a Confluent-compatible schema registry API`,
    );
    expect(error.message).toContain('/apis/ccompat/v7 (Apicurio)');
    expect(error.message).not.toContain('pw-secret-7');
  });

  it('names the credential keys when the registry answers 401', async () => {
    const registry = (server = await fakeRegistry(401, SUBJECTS));
    const error = await failureOf(
      verifySchemaRegistry({ url: `${registry.base}/apis/ccompat/v7`, username: 'u', password: 'p' }),
    );
    expect(error.code).toBe('SCHEMA_REGISTRY_AUTH_FAILED');
    expect(error.message).toContain('check schemaRegistry.username and schemaRegistry.password');
  });

  it('says the registry cannot be reached, and where, when nothing listens', async () => {
    const registry = await fakeRegistry(200, SUBJECTS);
    const { base } = registry;
    await registry.close();
    const error = await failureOf(verifySchemaRegistry({ url: `${base}/apis/ccompat/v7` }));
    expect(error.code).toBe('SCHEMA_REGISTRY_UNREACHABLE');
    expect(error.message).toContain(
      `cannot reach the schema registry at ${base}/apis/ccompat/v7 (ECONNREFUSED)`,
    );
    expect(error.message).toContain('check schemaRegistry.url');
  });
});

describe('waitForSchemaRegistry', () => {
  it('waits for a registry that is down at start, and goes on once it answers', async () => {
    const port = await freeLoopbackPort();
    const warnings: Array<{ code?: string }> = [];
    let registry: Server | undefined;
    const ready = waitForSchemaRegistry(
      { url: `http://127.0.0.1:${port}/apis/ccompat/v7` },
      {
        initialDelayMs: 5,
        logger: {
          // The registry comes up after the first failed probe.
          warn: (details: { code?: string }) => {
            warnings.push(details);
            if (registry === undefined) {
              registry = createServer((_req, res) => res.end('[]'));
              registry.listen(port, '127.0.0.1');
            }
          },
        },
      },
    );
    await ready;
    expect(warnings.length).toBeGreaterThanOrEqual(1);
    expect(warnings[0]?.code).toBe('SCHEMA_REGISTRY_UNREACHABLE');
    await new Promise((resolve) => registry?.close(resolve));
  });

  it('fails at once on a wrong URL, and ends the wait when the signal is aborted', async () => {
    const registry = await fakeRegistry(200, SUBJECTS);
    const logger = { warn: () => undefined };
    const wrong = await failureOf(waitForSchemaRegistry({ url: `${registry.base}/wrong` }, { logger }));
    expect(wrong.code).toBe('SCHEMA_REGISTRY_URL_WRONG');
    await registry.close();
    const stop = new AbortController();
    const waiting = waitForSchemaRegistry(
      { url: `${registry.base}/apis/ccompat/v7` },
      { logger: { warn: () => stop.abort() }, signal: stop.signal, initialDelayMs: 60_000 },
    );
    const stopped = await failureOf(waiting);
    expect(stopped.code).toBe('SCHEMA_REGISTRY_UNREACHABLE');
  });
});
