/**
 * `calls-connector sandbox` as a user runs it: a child process that prints its banner, serves HTTPS with
 * the CA it wrote, and stops cleanly on SIGINT (Ctrl-C).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';

const runner = 'test/component/cli/commands/run-cli.ts';

function waitForOutput(child: ChildProcess, pattern: RegExp, timeoutMs = 25_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`no ${String(pattern)} in output:\n${out}`)), timeoutMs);
    const onData = (chunk: Buffer): void => {
      out += chunk.toString();
      if (pattern.test(out)) {
        clearTimeout(timer);
        resolve(out);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (!pattern.test(out)) reject(new Error(`exited with ${code} before ${String(pattern)}:\n${out}`));
    });
  });
}

describe('calls-connector sandbox', () => {
  let child: ChildProcess | undefined;
  afterEach(() => {
    if (child?.exitCode === null) child.kill('SIGKILL');
  });

  it('prints its address, client, locations and CA, serves HTTPS, and stops on SIGINT', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sandbox-cli-'));
    const caFile = join(dir, 'ca.pem');
    const locationsFile = join(dir, 'locations.json');
    child = spawn(
      process.execPath,
      [
        'node_modules/vite-node/vite-node.mjs',
        runner,
        '--',
        'sandbox',
        '--port',
        '0',
        '--locations',
        '2',
        '--calls',
        '20',
        '--cert-out',
        caFile,
        '--locations-out',
        locationsFile,
        '--client-id',
        'cli-app',
      ],
      {
        env: { ...process.env, SANDBOX_CLIENT_SECRET: 'not-the-default' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const banner = await waitForOutput(child, /Press Ctrl-C to stop/);
    const baseUrl = /listening on (https:\/\/127\.0\.0\.1:\d+)/.exec(banner)?.[1] as string;
    expect(baseUrl).toBeDefined();
    expect(banner).toContain('client_id      cli-app');
    expect(banner).not.toContain('not-the-default');
    expect(banner).toContain(caFile);
    const locations = JSON.parse(await readFile(locationsFile, 'utf8')) as string[];
    expect(locations).toHaveLength(2);

    const agent = new Agent({ connect: { ca: await readFile(caFile, 'utf8') } });
    const res = await request(`${baseUrl}/_sandbox/locations`, { dispatcher: agent });
    expect(res.statusCode).toBe(200);
    expect(await res.body.json()).toEqual({ data: locations });
    await agent.close();

    const exited = new Promise<number | null>((resolve) => child?.once('exit', (code) => resolve(code)));
    const stopping = waitForOutput(child, /stopping the sandbox/);
    // SIGINT: under vite-node, Vite's dev server claims SIGTERM for itself; the command handles both alike.
    child.kill('SIGINT');
    await stopping;
    expect(await exited).toBe(0);
  });
});
