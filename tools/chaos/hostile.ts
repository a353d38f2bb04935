/**
 * Hostile API bodies against the real process: for each case, a calls API (plain HTTP on loopback, a static
 * token) whose listing answers with that body, and one connector process (the built CLI, `run`) pointed at it
 * for a few seconds (`caseMs`). What is recorded per case: the error codes the connector logged, whether it exited (and
 * how), how many dead letters it wrote, and its peak resident memory. A case passes when the process neither
 * crashed (exit other than 0 under SIGTERM, or a stack trace of an internal error) nor grew without bound.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { probeTopic } from './progress-probe.js';
import { cliPath, LoggedProcess, sleep } from './processes.js';

const LOCATION = '6f1c2c36-9f59-4f3e-8a53-3c1f1e0c6a11';
const MiB = 1024 * 1024;
/** A process whose RSS passes this while it reads hostile bodies has not bounded its memory. */
export const HOSTILE_RSS_LIMIT_BYTES = 512 * MiB;

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

const page = (items: unknown[]): string => JSON.stringify({ data: items, metadata: { nextCursor: null } });

type Body = string | Buffer | ((res: ServerResponse) => void);

/** 200 MB of a page, written only as fast as the client reads it. */
function endless(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  const chunk = Buffer.from(`${JSON.stringify(item('filler'))},`.repeat(500));
  let sent = 0;
  res.write('{"data":[');
  const pump = (): void => {
    while (sent < 200 * MiB) {
      sent += chunk.length;
      if (!res.write(chunk)) {
        res.once('drain', pump);
        return;
      }
    }
    res.end(`${JSON.stringify(item('last'))}]}`);
  };
  pump();
}

export interface HostileCase {
  name: string;
  body: Body;
}

export const HOSTILE_CASES: HostileCase[] = [
  { name: 'a 200 MB page (over api.maxResponseBytes)', body: endless },
  {
    name: 'a 13 MB page of 20,000 valid calls (limit 100 asked)',
    body: page(
      Array.from({ length: 20_000 }, (_, i) => item(`call-${i}`, { locationPhoneNumber: 'x'.repeat(400) })),
    ),
  },
  {
    name: 'wrong types (uid a number, updatedAt a boolean, an item a string)',
    body: page([
      item('good'),
      item('n', { uid: 12345 }),
      item('b', { updatedAt: true }),
      'an item',
      item('o', { customerPhoneNumber: { a: 1 } }),
    ]),
  },
  {
    name: 'JSON nested 1,000,000 levels deep',
    body: `{"data":[${'['.repeat(1_000_000)}${']'.repeat(1_000_000)}]}`,
  },
  {
    name: 'a 12 MB string in one call',
    body: page([item('huge', { locationPhoneNumber: 'x'.repeat(12 * MiB) })]),
  },
  {
    name: 'invalid UTF-8 in a string',
    body: Buffer.concat([
      Buffer.from(page([item('utf8', { locationPhoneNumber: '@@' })]).split('@@')[0] ?? ''),
      Buffer.from([0xff, 0xfe, 0xc3, 0x28]),
      Buffer.from(page([item('utf8', { locationPhoneNumber: '@@' })]).split('@@')[1] ?? ''),
    ]),
  },
  {
    name: 'duplicate keys',
    body: `{"data":[${JSON.stringify(item('dup')).replace('"uid":"dup"', '"uid":"first","uid":"dup"')}],"data":[],"metadata":{"nextCursor":null}}`,
  },
  { name: 'an HTML page with status 200', body: '<html><body><h1>Maintenance</h1></body></html>' },
];

export interface HostileOutcome {
  name: string;
  /** Distinct error codes the connector logged while the case ran. */
  codes: string[];
  exit: string;
  deadLetters: number;
  peakRssBytes: number;
  passed: boolean;
  detail: string;
}

function singleCall(uid: string): string {
  return JSON.stringify({
    data: {
      ...item(uid),
      startedAt: '2026-01-02T03:00:00.000Z',
      endedAt: '2026-01-02T03:04:00.000Z',
      isPrivate: false,
    },
  });
}

async function serve(body: () => Body): Promise<Server> {
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (path.startsWith('/v4/calls/')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(singleCall(decodeURIComponent(path.slice('/v4/calls/'.length))));
      return;
    }
    const current = body();
    if (typeof current === 'function') return current(res);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(current);
  });
  server.on('clientError', () => undefined);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return server;
}

/** Runs every case, one connector process each, against the chaos stack; `say` reports progress. */
export async function runHostileCases(options: {
  brokers: string;
  registryUrl: string;
  runDir: string;
  runId: string;
  metricsPort: number;
  /** How long each body is served before SIGTERM. */
  caseMs: number;
  say: (message: string) => void;
}): Promise<HostileOutcome[]> {
  let current: Body = '';
  const server = await serve(() => current);
  const outcomes: HostileOutcome[] = [];
  try {
    for (const [i, c] of HOSTILE_CASES.entries()) {
      current = c.body;
      const name = `chaos-${options.runId}-hostile-${i}`;
      const config = join(options.runDir, `hostile-${i}.yaml`);
      writeFileSync(
        config,
        stringify({
          connector: { name },
          api: {
            baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
            allowInsecureHttp: true,
            retry: { maxAttempts: 3, initialDelayMs: 50, maxDelayMs: 200 },
          },
          auth: { staticToken: 'hostile-static-token' },
          sources: [{ locations: [LOCATION] }],
          kafka: {
            brokers: [options.brokers],
            topic: `${name}-calls`,
            offsetsTopic: `${name}-offsets`,
            dlqTopic: `${name}-dlq`,
            topicPartitions: 1,
          },
          schemaRegistry: { url: options.registryUrl },
          poll: { intervalMs: 1000, shutdownTimeoutMs: 5000 },
          metrics: { host: '127.0.0.1', port: options.metricsPort },
          logging: { level: 'info', format: 'json' },
        }),
      );
      const connector = new LoggedProcess(
        `hostile-${i}`,
        [cliPath, 'run', '--config', config],
        join(options.runDir, 'logs', `hostile-${i}.log`),
        { ...process.env, FORCE_COLOR: '0' },
      );
      await Promise.race([connector.exited, sleep(options.caseMs)]);
      connector.signal('SIGTERM');
      const exit = await Promise.race([connector.exited, sleep(20_000).then(() => null)]);
      if (exit === null) {
        connector.signal('SIGKILL');
        await connector.exited;
      }
      const log = await readFile(connector.logFile, 'utf8').catch(() => '');
      const codes = [...new Set([...log.matchAll(/"code":"([A-Z][A-Z0-9_]+)"/g)].map((m) => m[1] ?? ''))];
      const deadLetters = await probeTopic(options.brokers, `${name}-dlq`, () => undefined, 2000).catch(
        () => 0,
      );
      const exitText = exit === null ? 'no exit within 20 s of SIGTERM' : `exit ${exit.code ?? exit.signal}`;
      const crashed = /internal error|Maximum call stack|"type":"(?:RangeError|TypeError)"/.test(log);
      const bounded = connector.peakRssBytes < HOSTILE_RSS_LIMIT_BYTES;
      const passed = exit !== null && exit.code === 0 && !crashed && bounded;
      const outcome: HostileOutcome = {
        name: c.name,
        codes,
        exit: exitText,
        deadLetters,
        peakRssBytes: connector.peakRssBytes,
        passed,
        detail: [crashed ? 'a crash in the log' : '', bounded ? '' : 'RSS over the limit']
          .filter(Boolean)
          .join(', '),
      };
      outcomes.push(outcome);
      options.say(
        `hostile body: ${c.name}: ${passed ? 'ok' : 'FAILED'} (${exitText}, codes ${codes.join(' ') || 'none'}, ` +
          `${deadLetters} dead letters, peak RSS ${(connector.peakRssBytes / MiB).toFixed(0)} MiB)${outcome.detail ? `: ${outcome.detail}` : ''}`,
      );
    }
  } finally {
    await new Promise((done) => server.close(done));
    server.closeAllConnections();
  }
  return outcomes;
}
