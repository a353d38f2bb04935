import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { register, sandboxOptionsFrom, type SandboxFlags } from '../../../../src/cli/commands/sandbox.js';

function parse(args: string[]): SandboxFlags {
  const program = new Command().exitOverride().configureOutput({ writeErr: () => undefined });
  let flags = {} as SandboxFlags;
  register(program);
  const sandbox = program.commands.find((c) => c.name() === 'sandbox') as Command;
  sandbox.action((f: SandboxFlags) => {
    flags = f;
  });
  program.parse(['node', 'calls-connector', 'sandbox', ...args]);
  return flags;
}

describe('calls-connector sandbox options', () => {
  it('defaults to HTTPS on 127.0.0.1:8443 with 5 locations of 1000 calls', async () => {
    const options = await sandboxOptionsFrom(parse([]), {});
    expect(options).toMatchObject({
      host: '127.0.0.1',
      port: 8443,
      tls: {},
      live: false,
      data: { seed: 1, locations: 5, callsPerLocation: 1000 },
    });
  });

  it('refuses a non-loopback address without SANDBOX_ADMIN_KEY, and takes one with it', async () => {
    for (const host of ['0.0.0.0', 'sandbox', '192.168.1.5', '::'])
      await expect(sandboxOptionsFrom(parse(['--host', host]), {})).rejects.toThrow(/SANDBOX_ADMIN_KEY/);
    const options = await sandboxOptionsFrom(parse(['--host', '0.0.0.0']), { SANDBOX_ADMIN_KEY: 'k-123' });
    expect(options).toMatchObject({ host: '0.0.0.0', adminKey: 'k-123' });
    await expect(sandboxOptionsFrom(parse(['--host', '127.0.0.2']), {})).resolves.toMatchObject({
      host: '127.0.0.2',
    });
  });

  it('writes the certificate to trust to --cert-out, else to the --cert file itself, else under .calls-connector/', async () => {
    expect((await sandboxOptionsFrom(parse([]), {})).certOutFile).toBe(
      resolve('.calls-connector/sandbox-ca.pem'),
    );
    expect((await sandboxOptionsFrom(parse(['--cert', 'c.pem', '--key', 'k.pem']), {})).certOutFile).toBe(
      resolve('c.pem'),
    );
    const explicit = parse(['--cert', 'c.pem', '--key', 'k.pem', '--cert-out', 'ca.pem']);
    expect((await sandboxOptionsFrom(explicit, {})).certOutFile).toBe(resolve('ca.pem'));
  });

  it('sends webhooks to every --webhook-target, with the location unless told not to, secret from the environment', async () => {
    expect((await sandboxOptionsFrom(parse([]), {})).webhooks).toEqual({
      targets: [],
      includeLocation: true,
      shape: 'standard-webhooks',
    });
    const options = await sandboxOptionsFrom(
      parse([
        '--webhook-target',
        'http://127.0.0.1:23801/webhooks/calls',
        '--webhook-target',
        'https://hooks.test/calls',
        '--webhook-omit-location',
        '--webhook-shape',
        'stripe',
      ]),
      { SANDBOX_WEBHOOK_SECRET: 'whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ=' },
    );
    expect(options.webhooks).toEqual({
      targets: ['http://127.0.0.1:23801/webhooks/calls', 'https://hooks.test/calls'],
      includeLocation: false,
      shape: 'stripe',
      secret: 'whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ=',
    });
    expect(() => parse(['--webhook-shape', 'carrier-pigeon'])).toThrow(
      /Allowed choices are standard-webhooks/,
    );
  });

  it('retries webhooks as the --webhook-retry-* flags say, the sandbox defaults otherwise', async () => {
    expect((await sandboxOptionsFrom(parse([]), {})).webhooks).not.toHaveProperty('retry');
    expect((await sandboxOptionsFrom(parse(['--webhook-retry-attempts', '20']), {})).webhooks?.retry).toEqual(
      { maxAttempts: 20 },
    );
    const flags = ['--webhook-retry-attempts', '1', '--webhook-retry-initial-delay', '0'];
    flags.push('--webhook-retry-max-delay', '60000');
    expect((await sandboxOptionsFrom(parse(flags), {})).webhooks?.retry).toEqual({
      maxAttempts: 1,
      initialDelayMs: 0,
      maxDelayMs: 60_000,
    });
    expect(() => parse(['--webhook-retry-attempts', '0'])).toThrow(/integer from 1/);
    expect(() => parse(['--webhook-retry-max-delay', '-5'])).toThrow(/integer from 0/);
  });

  it('takes the client secret from SANDBOX_CLIENT_SECRET, never from a flag', async () => {
    const options = await sandboxOptionsFrom(
      parse(['--client-id', 'app', '--redirect-uri', 'https://a.test/cb']),
      {
        SANDBOX_CLIENT_SECRET: 's3',
      },
    );
    expect(options.client).toEqual({ clientId: 'app', redirectUri: 'https://a.test/cb', clientSecret: 's3' });
    expect(() => parse(['--client-secret', 'x'])).toThrow();
  });

  it('reads the registered client from a file, flags taking precedence', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sandbox-cli-'));
    const file = join(dir, 'client.json');
    await writeFile(
      file,
      JSON.stringify({ clientId: 'from-file', redirectUri: 'https://f.test/cb', clientSecret: 'f' }),
    );
    const options = await sandboxOptionsFrom(parse(['--client-file', file, '--client-id', 'flag']), {});
    expect(options.client).toEqual({ clientId: 'flag', redirectUri: 'https://f.test/cb', clientSecret: 'f' });
  });

  it('maps --http, live rates and fault flags', async () => {
    const options = await sandboxOptionsFrom(
      parse([
        '--http',
        '--live-updates',
        '5',
        '--fault-rate-limit',
        '0.1',
        '--fault-latency-median',
        '20',
        '--fault-cursor-ttl',
        '1000',
      ]),
      {},
    );
    expect(options.tls).toBe(false);
    expect(options.live).toEqual({ updatesPerSecond: 5, createsPerSecond: 0 });
    expect(options.faults).toEqual({
      rateLimitRate: 0.1,
      latency: { medianMs: 20, p99Ms: 200 },
      cursorTtlMs: 1000,
    });
  });

  it('maps the enforced limit flags: per token by default, headers, quota', async () => {
    const options = await sandboxOptionsFrom(
      parse(['--limit-rps', '8', '--limit-headers', '--limit-quota', '5000', '--limit-quota-window', '3600']),
      {},
    );
    expect(options.faults).toEqual({
      rateLimit: {
        requestsPerSecond: 8,
        burst: 8,
        per: 'token',
        headers: true,
        quota: 5000,
        quotaWindowSeconds: 3600,
      },
    });
    expect(() => parse(['--limit-per', 'user'])).toThrow();
  });

  it('maps the header forms of the limit and of Retry-After (issue 32)', async () => {
    const options = await sandboxOptionsFrom(
      parse([
        '--limit-rps',
        '8',
        '--limit-headers',
        'x-ratelimit',
        '--limit-reset-form',
        'epoch-ms',
        '--fault-retry-after-form',
        'http-date',
      ]),
      {},
    );
    expect(options.faults).toMatchObject({
      retryAfterForm: 'http-date',
      rateLimit: { headers: 'x-ratelimit', resetForm: 'epoch-ms' },
    });
    expect(() => parse(['--limit-headers', 'x-rate'])).toThrow();
    expect(() => parse(['--limit-reset-form', 'epoch-us'])).toThrow();
    expect(() => parse(['--fault-retry-after-form', 'epoch'])).toThrow();
  });

  it('rejects rates outside 0..1 and ports out of range', () => {
    expect(() => parse(['--fault-drop', '2'])).toThrow();
    expect(() => parse(['--port', '70000'])).toThrow();
  });
});
