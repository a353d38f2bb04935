import { createServer, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import {
  HttpTransport,
  parsedPath,
  readCaFile,
  type HttpTransportOptions,
} from '../../../src/api/http-transport.js';
import { testMetrics } from '../../support/metrics.js';
import { eventually } from '../../support/async.js';

const options = {
  allowInsecureHttp: false,
  requestTimeoutMs: 1_000,
  maxResponseBytes: 1 << 20,
  requestsPerSecond: 5,
  maxConcurrency: 2,
  metrics: testMetrics(),
};

/** A plain-HTTP server on an ephemeral port, and a transport to it (with `extra` options). */
async function transportTo(
  handler: RequestListener,
  extra: Partial<HttpTransportOptions>,
): Promise<{ transport: HttpTransport; close: () => Promise<void> }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const transport = new HttpTransport({
    ...options,
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    allowInsecureHttp: true,
    ...extra,
  });
  return {
    transport,
    close: async () => {
      await transport.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('HttpTransport', () => {
  it('refuses a plain http base URL unless allowInsecureHttp is set', async () => {
    expect(() => new HttpTransport({ ...options, baseUrl: 'http://127.0.0.1:1' })).toThrow(
      expect.objectContaining({ code: 'API_INSECURE_URL' }) as Error,
    );
    await new HttpTransport({ ...options, baseUrl: 'http://127.0.0.1:1', allowInsecureHttp: true }).close();
  });

  it('names api.caFile when the CA file cannot be read', async () => {
    await expect(readCaFile('/nonexistent/ca.pem')).rejects.toMatchObject({
      code: 'API_CA_FILE',
      disposition: 'fatal',
    });
  });

  it('fails for good, naming neither header value nor token, when a header cannot be sent', async () => {
    // undici refuses the request before connecting (UND_ERR_INVALID_ARG): retrying cannot fix it.
    const transport = new HttpTransport({ ...options, baseUrl: 'https://127.0.0.1:1' });
    try {
      const error = await transport
        .send({ path: '/v4/calls', query: {}, headers: { authorization: 'Bearer s3cret\n' } })
        .catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'API_INVALID_REQUEST', disposition: 'fatal' });
      expect(String((error as Error).message)).not.toContain('s3cret');
    } finally {
      await transport.close();
    }
  });

  it('times the HTTP exchange apart from the wait on its own rate limit', async () => {
    const server = createServer((_req, res) => res.end('{}'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const metrics = testMetrics();
    // One request start per 2 s: the second request waits about 2 s in the limiter, then answers at once.
    const transport = new HttpTransport({
      ...options,
      metrics,
      baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      allowInsecureHttp: true,
      requestsPerSecond: 0.5,
    });
    try {
      const request = { endpoint: 'list', path: '/v4/calls', query: {}, headers: {} };
      await Promise.all([transport.send(request), transport.send(request)]);

      const bucket = async (histogram: 'apiRequestDuration' | 'apiRateLimiterWait', le: number) =>
        (await metrics[histogram].get()).values.find(
          (v) => v.metricName?.endsWith('_bucket') === true && (v.labels as { le?: number }).le === le,
        )?.value;
      // Both exchanges took well under a second; one of the two waits was over a second.
      expect(await bucket('apiRequestDuration', 1)).toBe(2);
      expect(await bucket('apiRateLimiterWait', 1)).toBe(1);
      expect(await bucket('apiRateLimiterWait', 2.5)).toBe(2);
      const labels = (await metrics.apiRequestDuration.get()).values.map((v) => v.labels);
      expect(labels).toContainEqual(expect.objectContaining({ endpoint: 'list', status_class: '2xx' }));
    } finally {
      await transport.close();
      await new Promise((resolve) => server.close(resolve));
    }
  });
  it('fails with API_TIMEOUT when the whole exchange outlasts api.requestTimeoutMs, though bytes keep coming', async () => {
    // A body trickling a byte every 50 ms never trips undici's idle timeouts: only the request's own deadline ends it.
    const { transport, close } = await transportTo(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        const drip = setInterval(() => res.write(' '), 50);
        res.on('close', () => clearInterval(drip));
      },
      { requestTimeoutMs: 300, requestsPerSecond: 100 },
    );
    try {
      const error = await transport
        .send({ path: '/v4/calls', query: {}, headers: {} })
        .catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'API_TIMEOUT', disposition: 'retriable' });
    } finally {
      await close();
    }
  });

  it('reads a body sent in many chunks whole, a character split between two chunks included', async () => {
    const text = '{"name":"Zoë Ångström","note":"☎"}';
    const bytes = Buffer.from(text, 'utf8');
    const { transport, close } = await transportTo(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        // One byte per write, each flushed on its own: every multi-byte character is cut between chunks.
        let at = 0;
        const next = () => {
          if (at === bytes.length) return void res.end();
          res.write(bytes.subarray(at, at + 1), () => setImmediate(next));
          at += 1;
        };
        next();
      },
      { requestsPerSecond: 100 },
    );
    try {
      const response = await transport.send({ path: '/v4/calls', query: {}, headers: {} });
      expect(response.status).toBe(200);
      expect(response.body).toBe(text);
    } finally {
      await close();
    }
  });

  it('stops reading a body past api.maxResponseBytes (API_RESPONSE_TOO_LARGE, retriable) and frees its connection', async () => {
    let serverSawClose = false;
    const { transport, close } = await transportTo(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.on('close', () => (serverSawClose = true));
        const drip = setInterval(() => res.write(Buffer.alloc(1024, 0x20)), 5);
        res.on('close', () => clearInterval(drip));
      },
      { requestsPerSecond: 100, maxResponseBytes: 4096, requestTimeoutMs: 30_000 },
    );
    try {
      const error = await transport
        .send({ path: '/v4/calls', query: {}, headers: {} })
        .catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'API_RESPONSE_TOO_LARGE', disposition: 'retriable' });
      await eventually(() => serverSawClose, 5_000, 'the server saw the connection closed');
    } finally {
      await close();
    }
  });

  it("rejects with the caller's abort reason, untouched, when the caller aborts an exchange in flight", async () => {
    let answered = false;
    const { transport, close } = await transportTo(
      () => {
        answered = true; // never answers
      },
      { requestsPerSecond: 100 },
    );
    try {
      const caller = new AbortController();
      const reason = new Error('the caller gave up');
      const sent = transport.send({ path: '/v4/calls', query: {}, headers: {} }, caller.signal);
      await eventually(() => answered, 5_000, 'the request reached the server');
      caller.abort(reason);
      await expect(sent).rejects.toBe(reason);
    } finally {
      await close();
    }
  });

  it('sends the path and query a URL parser leaves, whether or not the path needed parsing', async () => {
    const seen: string[] = [];
    const { transport, close } = await transportTo((req, res) => {
      seen.push(req.url ?? '');
      res.end('{}');
    }, {});
    try {
      await transport.send({
        path: '/v4/calls',
        query: { order: 'asc', since: '2026-01-01T00:00:00.5+01:00' },
        headers: {},
      });
      await transport.send({ path: '/v4/x/../calls/a b', query: { cursor: "it's (1)" }, headers: {} });
      await transport.send({ path: '/v4/calls/%7Buid%7D', query: {}, headers: {} });
    } finally {
      await close();
    }
    expect(seen).toEqual([
      '/v4/calls?order=asc&since=2026-01-01T00%3A00%3A00.5%2B01%3A00',
      '/v4/calls/a%20b?cursor=it%27s+%281%29',
      '/v4/calls/%7Buid%7D',
    ]);
  });
});

describe('parsedPath', () => {
  it('gives what a URL parser gives for every path, parsing only those it would change', () => {
    const origin = 'https://api.example.com:8443';
    const paths = [
      '/v4/calls',
      '/v4/calls?order=asc&locationUid=loc-1&limit=100&since=2026-11-29T10%3A00%3A00.123Z',
      '/v4/calls?cursor=abc%2Bdef%3D%3D&limit=100',
      '/v4/calls/uid-%C3%A9t%C3%A9',
      "/v4/calls/it's",
      "/v4/calls?q=it's",
      '/v4/./calls',
      '/v4/x/../calls',
      '/v4/x/%2e%2E/calls',
      '/v4/calls/..',
      '/v4/calls/a b',
      '/v4/calls/été',
      '/v4/calls/{uid}',
      '/v4/calls?q=a b',
      '/v4/calls#part',
      '/v4\\calls',
      '/v4/calls/%zz',
      '//v4//calls',
    ];
    for (const path of paths) {
      const url = new URL(`${origin}${path}`);
      expect(parsedPath(origin, path), path).toBe(`${url.pathname}${url.search}`);
    }
  });
});
