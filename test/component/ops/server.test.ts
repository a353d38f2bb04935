import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { FatalError } from '../../../src/errors/index.js';
import { Readiness, type ReadinessResult } from '../../../src/ops/readiness.js';
import { createLogger } from '../../../src/logging/logger.js';
import { testMetrics } from '../../support/metrics.js';
import { MetricsServer } from '../../../src/ops/server.js';

const servers: MetricsServer[] = [];

async function startServer(readiness?: Readiness, metrics = testMetrics()) {
  const server = new MetricsServer({ metrics, readiness, host: '127.0.0.1', port: 0 });
  servers.push(server);
  const address = await server.start();
  return { server, metrics, url: address.url, port: address.port };
}

async function get(url: string, method: 'GET' | 'HEAD' | 'POST' = 'GET') {
  const response = await request(url, { method });
  const body = await response.body.text();
  return { status: response.statusCode, headers: response.headers, body };
}

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

describe('MetricsServer', () => {
  it('serves the injected status as JSON on /status, and 404 without one', async () => {
    const server = new MetricsServer({
      metrics: testMetrics(),
      host: '127.0.0.1',
      port: 0,
      status: () => ({ name: 'calls', connector: { state: 'RUNNING' }, tasks: [], type: 'source' }),
    });
    servers.push(server);
    const { url } = await server.start();
    const response = await get(`${url}/status`);
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('application/json');
    expect(JSON.parse(response.body)).toEqual({
      name: 'calls',
      connector: { state: 'RUNNING' },
      tasks: [],
      type: 'source',
    });

    const { url: without } = await startServer();
    expect((await get(`${without}/status`)).status).toBe(404);
  });

  it('sets the readiness gauge of each check at every scrape', async () => {
    const readiness = new Readiness([
      async () => ({ name: 'kafka', ok: true }),
      async () => ({ name: 'schema_registry', ok: false, detail: 'down' }),
    ]);
    const { url } = await startServer(readiness);
    const body = (await get(`${url}/metrics`)).body;
    expect(body).toContain('calls_connector_readiness_check{check="kafka"} 1');
    expect(body).toContain('calls_connector_readiness_check{check="schema_registry"} 0');
  });

  it('binds an ephemeral port when asked for port 0 and reports it', async () => {
    const { port, url } = await startServer();
    expect(port).toBeGreaterThan(0);
    expect(url).toBe(`http://127.0.0.1:${port}`);
  });

  it('answers /healthz with 200 ok whatever the readiness checks say', async () => {
    const failing = new Readiness([async () => ({ name: 'kafka', ok: false, detail: 'down' })]);
    const { url } = await startServer(failing);
    const response = await get(`${url}/healthz`);
    expect(response.status).toBe(200);
    expect(response.body).toBe('ok\n');
  });

  it('answers /readyz with 200 and every check listed when all checks pass', async () => {
    const readiness = new Readiness([
      async () => ({ name: 'kafka', ok: true, detail: '1 broker(s)' }),
      async () => ({ name: 'schema_registry', ok: true }),
      async () => ({ name: 'grant:default', ok: true }),
    ]);
    const { url } = await startServer(readiness);
    const response = await get(`${url}/readyz`);
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('application/json');
    expect(JSON.parse(response.body)).toEqual({
      status: 'ready',
      ok: true,
      checks: [
        { name: 'kafka', ok: true, detail: '1 broker(s)' },
        { name: 'schema_registry', ok: true },
        { name: 'grant:default', ok: true },
      ],
    });
  });

  it('answers /readyz with 503 naming the failed check and its detail when one check fails', async () => {
    const readiness = new Readiness([
      async () => ({ name: 'kafka', ok: true }),
      async (): Promise<ReadinessResult> => {
        throw new Error('connect ECONNREFUSED 127.0.0.1:8081');
      },
      {
        name: 'grant:default',
        check: async () => ({ name: 'grant:default', ok: false, detail: 'revoked: run auth login' }),
      },
    ]);
    const { url } = await startServer(readiness);
    const response = await get(`${url}/readyz`);
    expect(response.status).toBe(503);
    const body = JSON.parse(response.body) as { status: string; ok: boolean; checks: ReadinessResult[] };
    expect(body.status).toBe('not ready');
    expect(body.ok).toBe(false);
    expect(body.checks.filter((c) => !c.ok)).toEqual([
      { name: expect.any(String) as string, ok: false, detail: 'connect ECONNREFUSED 127.0.0.1:8081' },
      { name: 'grant:default', ok: false, detail: 'revoked: run auth login' },
    ]);
  });

  it('is ready when no readiness check was injected', async () => {
    const { url } = await startServer();
    expect((await get(`${url}/readyz`)).status).toBe(200);
  });

  it('serves the registry on /metrics in the Prometheus text format with its content type', async () => {
    const metrics = testMetrics();
    metrics.recordsPublished.inc({ location: metrics.location('loc-1') }, 5);
    const { url } = await startServer(undefined, metrics);
    const response = await get(`${url}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe(metrics.registry.contentType);
    expect(response.body).toContain('# TYPE calls_connector_records_published_total counter');
    expect(response.body).toContain('calls_connector_records_published_total{location="loc-1"} 5');
  });

  it('answers HEAD without a body, 404 for unknown paths and 405 for other methods', async () => {
    const { url } = await startServer();
    const head = await get(`${url}/healthz`, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
    expect((await get(`${url}/nope`)).status).toBe(404);
    const post = await get(`${url}/metrics`, 'POST');
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET, HEAD');
  });

  it('ignores the query string when routing', async () => {
    const { url } = await startServer();
    expect((await get(`${url}/healthz?probe=1`)).status).toBe(200);
  });

  it('stops listening on stop() and can be stopped twice', async () => {
    const { server, url } = await startServer();
    await server.stop();
    await server.stop();
    await expect(request(`${url}/healthz`)).rejects.toThrow(/ECONNREFUSED/);
  });

  it('refuses to start on a port already in use, naming the address and the keys to change', async () => {
    const { port } = await startServer();
    const second = new MetricsServer({ metrics: testMetrics(), host: '127.0.0.1', port });
    const error = await second.start().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(FatalError);
    expect((error as FatalError).code).toBe('METRICS_LISTEN_FAILED');
    expect((error as FatalError).message).toBe(
      `cannot listen on 127.0.0.1:${port} for /metrics, /healthz and /readyz (EADDRINUSE): ` +
        'set metrics.port (and metrics.host) to a free address, or metrics.enabled: false',
    );
  });

  it('rejects an out-of-range port at construction', () => {
    expect(() => new MetricsServer({ metrics: testMetrics(), port: 70_000 })).toThrow(RangeError);
  });
});

describe('MetricsServer readiness logging', () => {
  it('logs when readiness changes, not on every probe', async () => {
    const lines: { level: number; msg: string }[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()) as { level: number; msg: string });
        done();
      },
    });
    let kafkaUp = false;
    const readiness = new Readiness([async () => ({ name: 'kafka', ok: kafkaUp })], { cacheMs: 0 });
    const server = new MetricsServer({
      metrics: testMetrics(),
      readiness,
      host: '127.0.0.1',
      port: 0,
      logger: createLogger({ destination, format: 'json' }),
    });
    servers.push(server);
    const { url } = await server.start();
    lines.length = 0;
    for (let i = 0; i < 5; i += 1) expect((await get(`${url}/readyz`)).status).toBe(503);
    kafkaUp = true;
    for (let i = 0; i < 5; i += 1) expect((await get(`${url}/readyz`)).status).toBe(200);
    expect(lines.map((l) => l.msg)).toEqual([
      'not ready: kafka failing',
      'ready: every readiness check passes',
    ]);
  });
});
