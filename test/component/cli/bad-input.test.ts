/**
 * Wrong input to the CLI, in-process through `main`: each failure names what is wrong and what to do, ends
 * with the README's exit code, and never with an internal error and a stack trace.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../../src/cli/main.js';
import { ExitCode } from '../../../src/errors/exit-codes.js';
import { capture } from '../../support/capture.js';
import { configFile } from '../../support/config-file.js';

function document(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    connector: { name: 'bad-input' },
    api: { baseUrl: 'https://127.0.0.1:1' },
    auth: { staticToken: 'unused-token' },
    sources: [{ locations: ['6f1c2c36-9f59-4f3e-8a53-3c1f1e0c6a11'] }],
    // Port 1 on loopback: nothing listens, the connection is refused at once.
    kafka: { brokers: ['127.0.0.1:1'] },
    schemaRegistry: { url: 'http://127.0.0.1:1' },
    logging: { level: 'fatal', format: 'json' },
    ...overrides,
  };
}

async function cli(...args: string[]): Promise<{ code: number; stderr: string; stdout: string }> {
  const stdout = capture(process.stdout);
  const stderr = capture(process.stderr);
  const code = await main(['node', 'calls-connector', ...args]);
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

describe('the CLI on bad input', () => {
  afterEach(() => {
    vi.restoreAllMocks();
    process.exitCode = undefined;
  });

  it('sandbox: a missing --cert file is named, with the flags to check, exit 2', async () => {
    const { code, stderr } = await cli(
      'sandbox',
      '--port',
      '0',
      '--cert',
      '/nonexistent/c.pem',
      '--key',
      '/nonexistent/k.pem',
    );
    expect(code).toBe(ExitCode.USAGE);
    expect(stderr).toContain(
      'cannot open /nonexistent/c.pem (ENOENT): check the paths given to --cert, --key',
    );
    expect(stderr).not.toContain('internal error');
  });

  it('tail: unreachable brokers are reported as KAFKA_UNAVAILABLE with what to check, exit 1', async () => {
    const { code, stderr } = await cli('tail', '--config', await configFile(document()), '--max', '1');
    expect(code).toBe(ExitCode.FAILURE);
    expect(stderr).toContain('[KAFKA_UNAVAILABLE] Kafka: Connection error: connect ECONNREFUSED 127.0.0.1:1');
    expect(stderr).toContain('what to do: check kafka.brokers');
    expect(stderr).not.toContain('internal error');
  }, 60_000);

  it('auth status: a token-store key that is not set is a configuration error naming the variable, exit 2', async () => {
    const file = await configFile(
      document({
        auth: undefined,
        oauth: {
          clientId: 'app',
          clientSecret: 'not-a-real-secret',
          redirectUri: 'https://127.0.0.1:8976/callback',
          store: { path: join(tmpdir(), 'bad-input-tokens', 'tokens.enc') },
          keyEnv: 'CALLS_CONNECTOR_TEST_KEY_THAT_IS_NOT_SET',
        },
      }),
    );
    const { code, stderr } = await cli('auth', 'status', '--config', file);
    expect(code).toBe(ExitCode.USAGE);
    expect(stderr).toContain('[AUTH_STORE_KEY_MISSING]');
    expect(stderr).toContain('CALLS_CONNECTOR_TEST_KEY_THAT_IS_NOT_SET');
    expect(stderr).not.toContain('not-a-real-secret');
  });

  it('validate-config: a location listed twice is refused before anything starts, exit 2', async () => {
    const uid = '6f1c2c36-9f59-4f3e-8a53-3c1f1e0c6a11';
    const file = await configFile(document({ sources: [{ locations: [uid] }, { locations: [uid] }] }));
    const { code, stderr } = await cli('validate-config', '--config', file);
    expect(code).toBe(ExitCode.USAGE);
    expect(stderr).toContain(`sources.1.locations.0: location ${uid} is listed twice in sources`);
  });

  it('validate-config: a wrongly typed key says the type expected and given, exit 2', async () => {
    const file = await configFile(document({ kafka: { brokers: ['127.0.0.1:1'], exactlyOnce: 'yes' } }));
    const { code, stderr } = await cli('validate-config', '--config', file);
    expect(code).toBe(ExitCode.USAGE);
    expect(stderr).toContain('kafka.exactlyOnce: expected boolean, got a string');
  });
});
