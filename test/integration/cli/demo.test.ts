/**
 * The README's first command, as a newcomer runs it (the built CLI in a child process), bounded by --duration:
 * it must bring up the sandbox, go through the real OAuth flow, publish calls to Kafka and explain how to read them.
 * The commands it prints (tail, "run the connector alone") are run as printed by first-hour.test.ts.
 */
import { spawn } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { stackEndpoints } from '../../support/stack.js';

const REGISTRY_PASSWORD = 'demo-registry-pass-5Tq';
const cli = resolve(import.meta.dirname, '../../../dist/src/cli/main.js');

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
    // The sandbox's live updates (3/s) come in by webhook: the live view and the summary say so.
    expect(output).toContain('webhooks: the sandbox sends each change to http://127.0.0.1:');
    const byWebhook = Number(
      /Webhooks: changes by webhook (\d+), by reconciliation poll/.exec(output)?.[1] ?? 0,
    );
    expect(byWebhook, output).toBeGreaterThan(0);
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
