import { createServer, type Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config/load.js';
import { ConnectorError } from '../../../src/errors/index.js';
import { freeLoopbackPort } from '../../../src/demo/free-port.js';
import { silentLogger } from '../../../src/logging/logger.js';
import { testMetrics } from '../../support/metrics.js';
import { ConnectorRuntime } from '../../../src/runtime/connector.js';

/**
 * A registry stand-in that answers 404 everywhere: not a Confluent-compatible API (a wrong URL). `beforeAnswer`
 * runs while the start waits for the answer.
 */
async function wrongRegistry(beforeAnswer: () => Promise<void>): Promise<{ url: string; server: Server }> {
  const server = createServer((_req, res) => {
    void beforeAnswer().then(() => {
      res.statusCode = 404;
      res.end('{"error_code":40401,"message":"not found"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/wrong`, server };
}

/** Whether something can listen on the port now (the metrics server let it go). */
async function portIsFree(port: number): Promise<boolean> {
  const server = createNetServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A configuration whose registry is `registryUrl`, its metrics server on `port`; nothing else reachable. */
function configOn(registryUrl: string, port: number) {
  return parseConfig(
    {
      connector: { name: 'orders' },
      api: { baseUrl: 'https://api.example.com' },
      auth: { staticToken: 'token' },
      sources: [{ locations: ['11111111-1111-1111-1111-111111111111'] }],
      kafka: { brokers: ['127.0.0.1:1'] },
      schemaRegistry: { url: registryUrl },
      metrics: { enabled: true, host: '127.0.0.1', port },
    },
    {},
  );
}

describe('ConnectorRuntime.start', () => {
  it('undoes what it opened when a later step fails: the metrics server started first lets its port go', async () => {
    const port = await freeLoopbackPort();
    let listeningDuringStart: boolean | undefined;
    const registry = await wrongRegistry(async () => {
      listeningDuringStart = !(await portIsFree(port));
    });
    const config = configOn(registry.url, port);
    try {
      const failure = await ConnectorRuntime.start({
        config,
        logger: silentLogger(),
        metrics: testMetrics(),
      }).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(ConnectorError);
      expect((failure as ConnectorError).code).toBe('SCHEMA_REGISTRY_URL_WRONG');
      expect(listeningDuringStart).toBe(true);
      expect(await portIsFree(port)).toBe(true);
    } finally {
      await new Promise((resolve) => registry.server.close(resolve));
    }
  });

  it('is not ready while it starts: /readyz fails on `started` until every start-up step ran', async () => {
    const port = await freeLoopbackPort();
    let duringStart: { status: number; body: string } | undefined;
    const registry = await wrongRegistry(async () => {
      const response = await fetch(`http://127.0.0.1:${port}/readyz`);
      duringStart = { status: response.status, body: await response.text() };
    });
    const config = configOn(registry.url, port);
    try {
      await ConnectorRuntime.start({ config, logger: silentLogger(), metrics: testMetrics() }).then(
        () => undefined,
        () => undefined,
      );
      expect(duringStart?.status).toBe(503);
      expect(JSON.parse(duringStart?.body ?? '{}')).toMatchObject({
        ok: false,
        checks: [{ name: 'started', ok: false }],
      });
    } finally {
      await new Promise((resolve) => registry.server.close(resolve));
    }
  });
});
