/**
 * The README's first command, as a newcomer runs it (the built CLI in a child process), bounded by --duration:
 * it must bring up the sandbox, go through the real OAuth flow, publish calls to Kafka and explain how to read them.
 * Then the "run the connector alone" steps it printed, pasted into a shell as a person would, with the test as
 * the person's browser.
 */
import { spawn } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { mkdir, mkdtemp, readFile, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Agent, request } from 'undici';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { stackEndpoints } from '../../support/stack.js';
import { eventually, readCommitted, testKafka } from '../../support/kafka.js';

const REGISTRY_PASSWORD = 'demo-registry-pass-5Tq';
const cli = resolve(import.meta.dirname, '../../../dist/src/cli/main.js');

interface DemoConfig {
  sources: { locations: string[] }[];
  api: { caFile: string };
  kafka: { topic: string };
}

/** The shell lines printed under "Run the connector alone", as one script (continuations kept). */
function printedAloneSteps(output: string): string {
  const lines = output.split('\n');
  const start = lines.findIndex((line) => line.startsWith('Run the connector alone'));
  const steps: string[] = [];
  for (const line of lines.slice(start + 1)) {
    if (line.startsWith('  ')) steps.push(line.slice(2));
    else if (steps.length > 0) break;
  }
  return steps.join('\n');
}

/** A person's browser: opens the authorization URL, then follows the sandbox's redirect to `auth login`. */
async function approveInBrowser(url: string, trusted: string[]): Promise<void> {
  const browser = new Agent({ connect: { ca: trusted } });
  try {
    const consent = await request(url, { dispatcher: browser });
    await consent.body.dump();
    expect(consent.statusCode).toBe(302);
    const callback = await request(String(consent.headers.location), { dispatcher: browser });
    await callback.body.dump();
    expect(callback.statusCode).toBe(200);
  } finally {
    await browser.close();
  }
}

describe('calls-connector demo', () => {
  const demo = { dir: '', output: '', code: null as number | null, busyPort: 0 };

  beforeAll(async () => {
    const { brokers, registryUrl } = stackEndpoints();
    demo.dir = await mkdtemp(join(tmpdir(), 'calls-demo-'));
    // The metrics port asked for is taken (another connector, an exporter): the demo takes a free one and says so.
    const busy = createServer();
    await new Promise<void>((listening) => busy.listen(0, '127.0.0.1', listening));
    demo.busyPort = (busy.address() as AddressInfo).port;
    const { npm_command: _npx, ...env } = process.env;
    const child = spawn(
      process.execPath,
      [
        cli,
        'demo',
        '--duration',
        '8',
        '--locations',
        '2',
        '--calls',
        '150',
        '--metrics-port',
        String(demo.busyPort),
        '--dir',
        demo.dir,
      ],
      {
        // Credentials in the registry URL, as some deployments write them: never printed or logged.
        env: {
          ...env,
          KAFKA_BROKERS: brokers.join(','),
          SCHEMA_REGISTRY_URL: registryUrl.replace('://', `://svc:${REGISTRY_PASSWORD}@`),
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    child.stdout.on('data', (chunk: Buffer) => (demo.output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (demo.output += chunk.toString()));
    demo.code = await new Promise<number | null>((done) => child.once('exit', done));
    busy.close();
  });

  it('runs sandbox, OAuth and connector end to end, then prints a summary and how to consume', async () => {
    const { dir, output, busyPort } = demo;
    expect(demo.code, output).toBe(0);
    expect(output).toContain('environment (KAFKA_BROKERS, SCHEMA_REGISTRY_URL)');
    expect(output).toMatch(/granted read_phones/);
    const published = Number(/Summary: (\d+) call records published/.exec(output)?.[1] ?? 0);
    expect(published).toBeGreaterThanOrEqual(250);
    expect(output).toContain('calls-connector tail --config');
    expect(output).toContain(`metrics port ${busyPort} is busy: using`);
    // Consume recipes that need no Confluent Platform.
    expect(output).toContain('kcat -C -b');
    expect(output).toContain('kafka-console-consumer.sh');
    expect(output).not.toContain('kafka-avro-console-consumer');

    // The grant is stored encrypted: the token store holds no token in plain text, and the config no secret.
    const config = await readFile(join(dir, 'config.yaml'), 'utf8');
    const tokens = await readFile(join(dir, 'tokens', 'tokens.enc'), 'utf8');
    expect(tokens).not.toMatch(/access_token|refresh_token|accessToken/);
    const secret = (await readFile(join(dir, 'secrets', 'client-secret'), 'utf8')).trim();
    expect(config).not.toContain(secret);
    expect(output).not.toContain(REGISTRY_PASSWORD);
    expect(await readFile(join(dir, 'connector.log'), 'utf8')).not.toContain(REGISTRY_PASSWORD);
  });

  it('runs the connector alone with the printed steps: the sandbox again, auth login in a browser, run, and new calls reach Kafka', async () => {
    const { dir, output } = demo;
    expect(demo.code, output).toBe(0);
    const config = parse(await readFile(join(dir, 'config.yaml'), 'utf8')) as DemoConfig;
    const script = printedAloneSteps(output);
    expect(script, output).toMatch(
      /^calls-connector sandbox [^]*&\ncalls-connector auth login [^]*\ncalls-connector run /,
    );

    // A person with the CLI on the PATH, in a folder of their own, without the demo's environment: the printed
    // lines alone (and the files they name) must do. The printed sandbox port was the demo's: free again.
    const bin = join(dir, 'bin');
    await mkdir(bin);
    await symlink(cli, join(bin, 'calls-connector'));
    const { KAFKA_BROKERS: _brokers, SCHEMA_REGISTRY_URL: _registry, ...env } = process.env;
    const home = await mkdtemp(join(tmpdir(), 'calls-demo-alone-'));
    const startedAt = Date.now();
    const shell = spawn('sh', ['-c', script], {
      cwd: home,
      env: { ...env, PATH: `${bin}:${env.PATH ?? ''}` },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stepsOutput = '';
    const exited = new Promise<number | null>((done) => shell.once('exit', done));
    try {
      // The browser step: once the sandbox listens and `auth login` shows its URL and its certificate file.
      const approved = new Promise<void>((done, failed) => {
        let opened = false;
        const onOutput = (chunk: Buffer) => {
          stepsOutput += chunk.toString();
          // A step that fails prints "calls-connector: <error>" (the others may wait on).
          if (/^calls-connector: /m.test(stepsOutput)) failed(new Error(`a step failed: ${stepsOutput}`));
          const url = /https:\/\/127\.0\.0\.1:\d+\/oauth\/authorize\?\S+/.exec(stepsOutput)?.[0];
          const certificate = /written to (\S+callback-certificate\.pem)/.exec(stepsOutput)?.[1];
          if (opened || !stepsOutput.includes('sandbox listening on') || !url || !certificate) return;
          opened = true;
          void (async () =>
            approveInBrowser(url, [
              await readFile(config.api.caFile, 'utf8'),
              await readFile(certificate, 'utf8'),
            ]))().then(done, failed);
        };
        shell.stdout.on('data', onOutput);
        shell.stderr.on('data', onOutput);
        void exited.then((code) => failed(new Error(`the steps ended (${code}): ${stepsOutput}`)));
      });
      await approved;
      await expect.poll(() => stepsOutput, { timeout: 30_000 }).toContain('Authorized. The grant is stored.');
      // The sandbox came back with the demo's locations and CA; the connector publishes its live changes.
      const locations = JSON.parse(await readFile(join(dir, 'sandbox-locations.json'), 'utf8')) as string[];
      expect(locations).toEqual(config.sources[0]?.locations);
      const kafka = testKafka();
      await eventually(
        async () =>
          (await readCommitted(kafka, config.kafka.topic)).some((r) => Number(r.timestamp) >= startedAt),
        60_000,
        'a call record written by the connector run alone',
      );
    } finally {
      // SIGTERM to the whole group: `run` stops gracefully, and so does the sandbox (a background job of
      // a non-interactive shell ignores SIGINT).
      if (shell.pid !== undefined) process.kill(-shell.pid, 'SIGTERM');
      await exited;
    }
    // No error or stack trace on the way (the connector logs JSON lines: error is level 50).
    expect(stepsOutput).not.toMatch(/"level":[56]0|\n\s+at /);
  });
});

describe('calls-connector demo --instances 2', () => {
  it('runs two instances in distributed mode that split the locations between them and publish them all', async () => {
    const { brokers, registryUrl } = stackEndpoints();
    const dir = await mkdtemp(join(tmpdir(), 'calls-demo-instances-'));
    const { npm_command: _npx, ...env } = process.env;
    const child = spawn(
      process.execPath,
      [cli, 'demo', '--instances', '2', '--duration', '8', '--locations', '16', '--calls', '20'],
      {
        env: { ...env, KAFKA_BROKERS: brokers.join(','), SCHEMA_REGISTRY_URL: registryUrl },
        stdio: ['ignore', 'pipe', 'pipe'],
        cwd: dir,
      },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((done) => child.once('exit', done));

    expect(code, output).toBe(0);
    expect(output).toContain('2 instances in distributed mode');
    // Each instance owns some of the 16 locations (a random connector name over 12 partitions split 6 + 6:
    // one side is left without any once in about 32,000 runs), and together they own them all.
    const owned = /Instances: #1 owned (\d+) locations?, #2 owned (\d+) locations?/.exec(output);
    const [first, second] = [Number(owned?.[1]), Number(owned?.[2])];
    expect(first, output).toBeGreaterThan(0);
    expect(second, output).toBeGreaterThan(0);
    expect(first + second).toBe(16);
    const published = Number(/Summary: (\d+) call records published/.exec(output)?.[1] ?? 0);
    expect(published).toBeGreaterThanOrEqual(16 * 20);
  });
});
