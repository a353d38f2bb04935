/**
 * The README's first command, as a newcomer runs it (the built CLI in a child process), bounded by --duration:
 * it must bring up the sandbox, go through the real OAuth flow, publish calls to Kafka and explain how to read them.
 */
import { spawn } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { stackEndpoints } from '../../support/stack.js';

const REGISTRY_PASSWORD = 'demo-registry-pass-5Tq';
const cli = resolve(import.meta.dirname, '../../../dist/src/cli/main.js');

describe('calls-connector demo', () => {
  it('runs sandbox, OAuth and connector end to end, then prints a summary and how to consume', async () => {
    const { brokers, registryUrl } = stackEndpoints();
    const dir = await mkdtemp(join(tmpdir(), 'calls-demo-'));
    // The metrics port asked for is taken (another connector, an exporter): the demo takes a free one and says so.
    const busy = createServer();
    await new Promise<void>((listening) => busy.listen(0, '127.0.0.1', listening));
    const busyPort = (busy.address() as AddressInfo).port;
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
        String(busyPort),
        '--dir',
        dir,
      ],
      {
        // Credentials in the registry URL, as some deployments write them: never printed or logged.
        env: {
          ...process.env,
          KAFKA_BROKERS: brokers.join(','),
          SCHEMA_REGISTRY_URL: registryUrl.replace('://', `://svc:${REGISTRY_PASSWORD}@`),
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((done) => child.once('exit', done));
    busy.close();

    expect(code, output).toBe(0);
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

    const config = await readFile(join(dir, 'config.yaml'), 'utf8');
    // "Run the connector alone" works as printed: the sandbox command brings back the demo's locations, client and CA.
    const rerun = /calls-connector sandbox (--port \d+ [^\n]*)\\\n\s+([^\n]*) &/.exec(output);
    expect(rerun, output).not.toBeNull();
    const args = `${rerun?.[1] ?? ''} ${rerun?.[2] ?? ''}`.trim().split(/\s+/);
    args[args.indexOf('--port') + 1] = '0'; // the printed port is free again, but other tests may take it
    const locationsOut = join(dir, 'rerun-locations.json');
    const sandbox = spawn(process.execPath, [cli, 'sandbox', ...args, '--locations-out', locationsOut], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let sandboxOutput = '';
      await new Promise<void>((listening, failed) => {
        sandbox.stdout.on('data', (chunk: Buffer) => {
          sandboxOutput += chunk.toString();
          if (sandboxOutput.includes('listening on')) listening();
        });
        sandbox.once('exit', () => failed(new Error(`the sandbox exited: ${sandboxOutput}`)));
      });
      const configured = parse(config) as { sources: { locations: string[] }[]; api: { caFile: string } };
      expect(JSON.parse(await readFile(locationsOut, 'utf8'))).toEqual(configured.sources[0]?.locations);
      expect(args[args.indexOf('--cert-out') + 1]).toBe(configured.api.caFile);
    } finally {
      sandbox.kill('SIGTERM');
    }

    // The grant is stored encrypted: the token store holds no token in plain text, and the config no secret.
    const tokens = await readFile(join(dir, 'tokens', 'tokens.enc'), 'utf8');
    expect(tokens).not.toMatch(/access_token|refresh_token|accessToken/);
    const secret = (await readFile(join(dir, 'secrets', 'client-secret'), 'utf8')).trim();
    expect(config).not.toContain(secret);
    expect(output).not.toContain(REGISTRY_PASSWORD);
    expect(await readFile(join(dir, 'connector.log'), 'utf8')).not.toContain(REGISTRY_PASSWORD);
  });
});
