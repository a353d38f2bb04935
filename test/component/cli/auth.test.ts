import { readFile, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Agent, request } from 'undici';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ExitCode } from '../../../src/cli/exit-codes.js';
import { main } from '../../../src/cli/main.js';
import {
  KEY_ENV,
  SECRET_ENV,
  startOAuthFixture,
  type OAuthFixture,
} from '../../support/auth/oauth-fixture.js';
import { capture } from '../../support/capture.js';

async function until<T>(probe: () => T | undefined, what: string): Promise<T> {
  for (let i = 0; i < 500; i++) {
    const value = probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('calls-connector auth', () => {
  let fx: OAuthFixture;
  let configPath: string;

  beforeEach(async () => {
    fx = await startOAuthFixture();
    configPath = join(fx.dir, 'connector.yaml');
    await writeFile(
      configPath,
      [
        'connector: { name: cli-test }',
        `api: { baseUrl: "${fx.sandbox.baseUrl}", caFile: "${fx.sandbox.caFile}" }`,
        `oauth: { clientId: ${fx.sandbox.client.clientId}, clientSecret: "\${${SECRET_ENV}}", redirectUri: "${fx.redirectUri}",`,
        `         store: { type: file, path: "${fx.storePath}" }, keyEnv: ${KEY_ENV} }`,
        `sources: [{ locations: ["${fx.sandbox.locations[0]}"] }]`,
        'kafka: { brokers: ["127.0.0.1:9"] }',
        'schemaRegistry: { url: "http://127.0.0.1:9" }',
      ].join('\n'),
    );
    process.env[KEY_ENV] = fx.env[KEY_ENV];
    process.env[SECRET_ENV] = fx.env[SECRET_ENV];
  });

  afterEach(async () => {
    vi.restoreAllMocks();
    delete process.env[KEY_ENV];
    delete process.env[SECRET_ENV];
    process.exitCode = undefined;
    await fx.close();
  });

  const run = (...args: string[]): Promise<number> =>
    main(['node', 'calls-connector', 'auth', ...args, '--config', configPath]);

  it('status says no grant (exit 3), url + redeem store one, status then shows its expiry and no secret, a second redeem is refused', async () => {
    const out = capture(process.stdout);
    const err = capture(process.stderr);
    expect(await run('status')).toBe(ExitCode.NOT_READY);
    expect(out.text()).toContain('No grant "default" is stored');
    process.exitCode = undefined;

    expect(await run('url', '--json')).toBe(ExitCode.OK);
    const { url, state } = JSON.parse(
      out
        .text()
        .split('\n')
        .find((l) => l.startsWith('{')) ?? '{}',
    ) as { url: string; state: string };
    expect(url).toContain('scope=read_phones');
    const { redirect } = await fx.browse(url);
    const code = redirect.searchParams.get('code') ?? '';

    expect(await run('redeem', '--code', code, '--state', state)).toBe(ExitCode.OK);
    expect(out.text()).toContain('Authorized. The grant is stored.');
    expect(await run('status')).toBe(ExitCode.OK);
    expect(out.text()).toMatch(/access token expires: \S+ \(in 9 h 59 min\)/);
    expect(out.text()).toContain('refresh token:        present');

    expect(await run('redeem', '--code', code, '--state', state)).toBe(ExitCode.FAILURE);
    expect(err.text()).toContain('[AUTH_STATE_REUSED]');

    const everything = out.text() + err.text();
    expect(everything).not.toContain(code);
    expect(everything).not.toContain(fx.sandbox.client.clientSecret);
    expect(everything).not.toMatch(/sbx_(at|rt)_/);
  });

  it('login listens on the redirect_uri with a generated certificate, prints its fingerprint, and stores the grant', async () => {
    const out = capture(process.stdout);
    const port = fx.listener.port;
    await fx.listener.close();
    const done = run('login', '--no-open', '--timeout', '20', '--listen', `127.0.0.1:${port}`);
    const url = await until(
      () => /https:\/\/\S+\/oauth\/authorize\?\S+/.exec(out.text())?.[0],
      'the authorization URL',
    );
    const certPath = await until(
      () => /written to (\S+\.pem)\)/.exec(out.text())?.[1],
      'the certificate path',
    );
    expect(out.text()).toMatch(/SHA-256 fingerprint is\n {2}([0-9A-F]{2}:){31}[0-9A-F]{2}/);
    // In a folder of its own made by mkdtemp (0700), never a predictable name in the shared temp folder.
    expect(certPath).toMatch(/calls-connector-callback-[A-Za-z0-9]{6}\/callback-certificate\.pem$/);
    expect((await stat(dirname(certPath))).mode & 0o777).toBe(0o700);

    const toSandbox = new Agent({ connect: { ca: fx.sandbox.caCertPem ?? undefined } });
    const toListener = new Agent({ connect: { ca: await readFile(certPath, 'utf8') } });
    const approved = await request(url, { dispatcher: toSandbox });
    await approved.body.dump();
    const landed = await request(String(approved.headers.location), { dispatcher: toListener });
    expect(landed.statusCode).toBe(200);
    await landed.body.dump();
    expect(await done).toBe(ExitCode.OK);
    expect(out.text()).toContain('Authorized. The grant is stored.');
    await Promise.all([toSandbox.close(), toListener.close()]);
  });
});
