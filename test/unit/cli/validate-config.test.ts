import { afterEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../../src/cli/main.js';
import { ExitCode } from '../../../src/errors/exit-codes.js';
import { capture } from '../../support/capture.js';
import { configFile } from '../../support/config-file.js';

const valid = [
  'connector: { name: demo }',
  'api: { baseUrl: "https://api.example.test" }',
  'oauth: { clientId: app, clientSecret: "${APP_SECRET}", redirectUri: "https://app.example.test/cb" }',
  'sources: [{ locations: ["6f1c2c36-9f59-4f3e-8a53-3c1f1e0c6a11"] }]',
  'kafka: { brokers: ["127.0.0.1:9092"], ssl: true, sasl: { mechanism: plain, username: u, password: "${KAFKA_PASSWORD}" } }',
  'schemaRegistry: { url: "http://127.0.0.1:8081" }',
];

/** `validate-config --strict` on `file`, with the token-store key variable set for the run only. */
async function validateStrictWithTokenKey(file: string): Promise<number> {
  process.env.CALLS_CONNECTOR_TOKEN_KEY = 'set-for-this-test';
  try {
    return await main(['node', 'calls-connector', 'validate-config', '--config', file, '--strict']);
  } finally {
    delete process.env.CALLS_CONNECTOR_TOKEN_KEY;
  }
}

describe('calls-connector validate-config', () => {
  afterEach(() => {
    vi.restoreAllMocks();
    delete process.env.APP_SECRET;
    delete process.env.KAFKA_PASSWORD;
    process.exitCode = undefined;
  });

  it('prints the effective configuration with secrets redacted and exits 0', async () => {
    process.env.APP_SECRET = 'super-secret-value';
    process.env.KAFKA_PASSWORD = 'kafka-pass-value';
    const stdout = capture(process.stdout);
    const code = await main([
      'node',
      'calls-connector',
      'validate-config',
      '--config',
      await configFile(valid),
    ]);
    expect(code).toBe(ExitCode.OK);
    expect(stdout.text()).toContain('listPath: /v4/calls');
    expect(stdout.text()).not.toContain('super-secret-value');
    expect(stdout.text()).not.toContain('kafka-pass-value');
    expect(stdout.text()).toContain('[redacted]');
  });

  it('exits 2 and names the key when the configuration is invalid', async () => {
    process.env.APP_SECRET = 's';
    process.env.KAFKA_PASSWORD = 'p';
    const stderr = capture(process.stderr);
    const file = await configFile(
      valid.map((l) => l.replace('https://api.example.test', 'ftp://api.example.test')),
    );
    const code = await main(['node', 'calls-connector', 'validate-config', '--config', file]);
    expect(code).toBe(ExitCode.USAGE);
    expect(stderr.text()).toContain('api.baseUrl');
  });

  it('prints no credential written in a URL (registry userinfo)', async () => {
    process.env.APP_SECRET = 's';
    process.env.KAFKA_PASSWORD = 'p';
    const stdout = capture(process.stdout);
    const file = await configFile(
      valid.map((l) => l.replace('http://127.0.0.1:8081', 'https://svc:registry-pass-value@127.0.0.1:8081')),
    );
    const code = await main(['node', 'calls-connector', 'validate-config', '--config', file]);
    expect(code).toBe(ExitCode.OK);
    expect(stdout.text()).toContain('url: https://[redacted]@127.0.0.1:8081');
    expect(stdout.text()).not.toContain('registry-pass-value');
  });

  it('warns about files the config names that cannot be read and an unset token-store key, and still exits 0', async () => {
    process.env.APP_SECRET = 's';
    process.env.KAFKA_PASSWORD = 'p';
    const stderr = capture(process.stderr);
    capture(process.stdout);
    const file = await configFile([
      ...valid.map((l) =>
        l.replace('"https://api.example.test"', '"https://api.example.test", caFile: /nonexistent/ca.pem'),
      ),
    ]);
    const savedKey = process.env.CALLS_CONNECTOR_TOKEN_KEY;
    delete process.env.CALLS_CONNECTOR_TOKEN_KEY;
    try {
      const code = await main(['node', 'calls-connector', 'validate-config', '--config', file]);
      expect(code).toBe(ExitCode.OK);
    } finally {
      if (savedKey !== undefined) process.env.CALLS_CONNECTOR_TOKEN_KEY = savedKey;
    }
    expect(stderr.text()).toContain(
      'calls-connector: warning: api.caFile: cannot read /nonexistent/ca.pem (ENOENT)',
    );
    expect(stderr.text()).toContain(
      'calls-connector: warning: oauth.keyEnv: the environment variable CALLS_CONNECTOR_TOKEN_KEY (the token-store key) is not set',
    );
  });

  it('with --strict, exits 2 when a file the config names cannot be read', async () => {
    process.env.APP_SECRET = 's';
    process.env.KAFKA_PASSWORD = 'p';
    const stderr = capture(process.stderr);
    const stdout = capture(process.stdout);
    const file = await configFile([
      ...valid.map((l) =>
        l.replace('"https://api.example.test"', '"https://api.example.test", caFile: /nonexistent/ca.pem'),
      ),
    ]);
    expect(await validateStrictWithTokenKey(file)).toBe(ExitCode.USAGE);
    expect(stderr.text()).toBe(
      'calls-connector: error: api.caFile: cannot read /nonexistent/ca.pem (ENOENT)\n',
    );
    expect(stdout.text()).toBe('');
  });

  it('warns that poll.intervalMs is ignored while webhooks are enabled, naming the key to set, even with --strict', async () => {
    process.env.APP_SECRET = 's';
    process.env.KAFKA_PASSWORD = 'p';
    const stderr = capture(process.stderr);
    capture(process.stdout);
    const file = await configFile([
      ...valid,
      'poll: { intervalMs: 30s }',
      'webhooks: { enabled: true, allowUnsigned: true }',
    ]);
    expect(await validateStrictWithTokenKey(file)).toBe(ExitCode.OK);
    expect(stderr.text()).toBe(
      'calls-connector: warning: poll.intervalMs (30000 ms) is ignored while webhooks.enabled: locations are ' +
        'polled every webhooks.reconcileIntervalMs (900000 ms) and nudged by deliveries; set ' +
        'webhooks.reconcileIntervalMs to change the interval, and remove poll.intervalMs\n',
    );
  });

  it('exits 2 on an unknown command', async () => {
    capture(process.stderr);
    const code = await main(['node', 'calls-connector', 'no-such-command']);
    expect(code).toBe(ExitCode.USAGE);
  });
});
