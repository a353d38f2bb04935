/**
 * Hostile API bodies, table-driven: a calls API that answers a listing with a huge page, wrong types,
 * deeply nested JSON, enormous strings, invalid UTF-8 or duplicate keys. Each case ends in a clear error
 * (a named code, never a crash of the process) or dead letters for the bad items while the good ones are
 * published; none is read into memory beyond api.maxResponseBytes.
 *
 * The server is a plain HTTP server on loopback (api.allowInsecureHttp) that serves, for every listing, the
 * body of the case at hand, and for every single-call GET the call it was asked for.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CallsApiClient } from '../../../src/api/calls-api-client.js';
import { HttpTransport } from '../../../src/api/http-transport.js';
import { apiSchema } from '../../../src/config/schema.js';
import { ConnectorError } from '../../../src/errors/index.js';
import { silentLogger } from '../../../src/logging/logger.js';
import { testMetrics } from '../../support/metrics.js';
import { InMemorySink } from '../../support/sync/in-memory-sink.js';
import { locationSync, type SandboxClientHarness } from '../../support/sync/sandbox-harness.js';

const LOCATION = '6f1c2c36-9f59-4f3e-8a53-3c1f1e0c6a11';
const MAX_RESPONSE_BYTES = 1024 * 1024;

function item(uid: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    uid,
    locationUid: LOCATION,
    updatedAt: '2026-01-02T03:04:05.678Z',
    locationPhoneNumber: '+15550001111',
    customerPhoneNumber: '+15550002222',
    startedAt: null,
    endedAt: null,
    isPrivate: null,
    conversationUid: null,
    ...overrides,
  };
}

function singleCall(uid: string): string {
  return JSON.stringify({
    data: {
      ...item(uid),
      startedAt: '2026-01-02T03:00:00.000Z',
      endedAt: '2026-01-02T03:04:00.000Z',
      isPrivate: false,
      conversationUid: null,
    },
  });
}

const page = (items: unknown[]): string => JSON.stringify({ data: items, metadata: { nextCursor: null } });

/** What a listing answers in one case: a body, or a writer streaming one. */
type Listing = string | Buffer | ((res: ServerResponse) => void);

interface Case {
  name: string;
  listing: Listing;
  /** The error code the traversal fails with, or null when it completes. */
  error: string | null;
  /** A part of that error's message. */
  says?: string;
  published?: number;
  deadLetters?: string[];
}

let streamedBytes = 0;
let streamClosedEarly = false;

/** 200 MB of a valid-looking page, written only as fast as the client reads it. */
function endlessPage(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  const chunk = Buffer.from(`${JSON.stringify(item('c-filler'))},`.repeat(200));
  const total = 200 * 1024 * 1024;
  res.write('{"data":[');
  const pump = (): void => {
    while (streamedBytes < total) {
      streamedBytes += chunk.length;
      if (!res.write(chunk)) {
        res.once('drain', pump);
        return;
      }
    }
    res.end(']}');
  };
  res.once('close', () => (streamClosedEarly = streamedBytes < total));
  pump();
}

const DEPTH = 200_000;

const cases: Case[] = [
  {
    name: 'a page larger than api.maxResponseBytes (200 MB streamed)',
    listing: endlessPage,
    error: 'API_UNAVAILABLE',
    says: 'exceeds api.maxResponseBytes',
  },
  {
    name: 'items that are not an array',
    listing: JSON.stringify({ data: { uid: 'x' }, metadata: { nextCursor: null } }),
    error: 'API_MALFORMED_BODY',
    says: 'the page has no array at `data` (api.itemsField)',
  },
  {
    name: 'a body that is not JSON at all',
    listing: '<html><body>Bad gateway</body></html>',
    error: 'API_MALFORMED_BODY',
  },
  {
    name: 'items of wrong types beside a good one',
    listing: page([
      item('c-good'),
      item('c-uid-number', { uid: 12345 }),
      item('c-bad-time', { updatedAt: true }),
      'a string item',
      item('c-phone-object', { customerPhoneNumber: { nested: true } }),
    ]),
    error: null,
    published: 1,
    deadLetters: ['ITEM_NO_UID', 'ITEM_BAD_UPDATED_AT', 'ITEM_SCHEMA_REJECTED', 'ITEM_SCHEMA_REJECTED'],
  },
  {
    name: `JSON nested ${DEPTH} levels deep`,
    listing: `{"data":[${'['.repeat(DEPTH)}${']'.repeat(DEPTH)}],"metadata":{"nextCursor":null}}`,
    error: null,
    published: 0,
    deadLetters: ['ITEM_SCHEMA_REJECTED'],
  },
  {
    name: 'an enormous string field within the size limit',
    listing: page([item('c-huge', { locationPhoneNumber: 'x'.repeat(MAX_RESPONSE_BYTES - 1000) })]),
    error: null,
  },
  {
    name: 'invalid UTF-8 inside a string',
    listing: Buffer.concat([
      Buffer.from(page([item('c-utf8', { locationPhoneNumber: 'MARK' })]).split('MARK')[0] ?? ''),
      Buffer.from([0xff, 0xfe, 0xc3]),
      Buffer.from(page([item('c-utf8', { locationPhoneNumber: 'MARK' })]).split('MARK')[1] ?? ''),
    ]),
    error: null,
    published: 1,
  },
  {
    name: 'duplicate keys (the last one wins, as in JSON.parse)',
    listing: `{"data":[${JSON.stringify(item('c-dup')).replace('"uid":"c-dup"', '"uid":"c-first","uid":"c-dup"')}],"data":[],"metadata":{"nextCursor":null}}`,
    error: null,
    published: 0,
  },
];

let server: Server;
let listing: Listing = '';
let harness: SandboxClientHarness;

beforeAll(async () => {
  server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (path.startsWith('/v4/calls/')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(singleCall(decodeURIComponent(path.slice('/v4/calls/'.length))));
      return;
    }
    if (typeof listing === 'function') return listing(res);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(listing);
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const api = apiSchema.parse({
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    allowInsecureHttp: true,
    maxResponseBytes: MAX_RESPONSE_BYTES,
    requestsPerSecond: 1000,
    retry: { maxAttempts: 2, initialDelayMs: 1, maxDelayMs: 5 },
  });
  const metrics = testMetrics();
  const transport = await HttpTransport.fromConfig(api, metrics);
  const client = new CallsApiClient({
    http: transport,
    tokens: {
      accessToken: async () => 'token',
      refreshAfterRejection: async () => 'token',
    },
    settings: api,
    metrics,
    logger: silentLogger(),
  });
  harness = {
    api,
    client,
    transport,
    metrics,
    tokens: null as never,
    close: () => transport.close(),
  };
});

afterAll(async () => {
  await harness.close();
  await new Promise((done) => server.close(done));
});

describe('a listing with a hostile body', () => {
  it.each(cases)('ends in a clear error or dead letters: $name', async (c) => {
    listing = c.listing;
    const sink = new InMemorySink();
    const sync = locationSync(harness, LOCATION, sink);
    let failure: unknown = null;
    try {
      for (let pages = 0; pages < 10 && !(await sync.runPage()).complete; pages++);
    } catch (error) {
      failure = error;
    }
    if (c.error === null) {
      expect(failure).toBeNull();
    } else {
      expect(failure).toBeInstanceOf(ConnectorError);
      expect((failure as ConnectorError).code).toBe(c.error);
      expect((failure as ConnectorError).message.length).toBeLessThan(2000);
      if (c.says !== undefined) expect((failure as ConnectorError).message).toContain(c.says);
    }
    if (c.published !== undefined) expect(sink.calls).toHaveLength(c.published);
    if (c.deadLetters !== undefined)
      expect(sink.deadLetters.map((d) => d.code).sort()).toEqual([...c.deadLetters].sort());
  });

  it('stops reading a body at api.maxResponseBytes: the 200 MB page was never read to its end', () => {
    expect(streamClosedEarly).toBe(true);
    expect(streamedBytes).toBeLessThan(50 * 1024 * 1024);
  });
});
