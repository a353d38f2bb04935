/**
 * Realistic failures of `calls-connector run`, in-process, at trace level: whatever the connector prints
 * (logs on stdout, the final error on stderr) must not contain a secret of its configuration, whether the
 * secret sits in a config key, in a URL's userinfo or in a request header of a failed call.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../../src/cli/main.js';
import { ExitCode } from '../../../src/errors/exit-codes.js';
import type { RunningSandbox } from '../../../packages/sandbox/src/index.js';
import { capture } from '../../support/capture.js';
import { eventually } from '../../support/async.js';
import { configFile } from '../../support/config-file.js';
import { connectorDocument, startTestSandbox } from '../../support/connector.js';

const REGISTRY_PASSWORD = 'registry-pass-7Hq2';
const SASL_PASSWORD = 'sasl-pass-Xw81';
const STATIC_TOKEN = 'static-token-Jd93kLmQ01';

/** The stack's registry URL with credentials written into it, as some deployments do. */
function withUserinfo(url: string): string {
  return url.replace('://', `://svc:${REGISTRY_PASSWORD}@`);
}

/**
 * Runs `calls-connector run` in-process on `document`. With `stopWhen`, a SIGTERM is delivered (to run's own
 * handler) once the output contains that text: for runs that wait rather than end.
 */
async function runWith(
  document: Record<string, unknown>,
  stopWhen?: string,
): Promise<{ code: number; output: string }> {
  const file = await configFile(document);
  const stdout = capture(process.stdout);
  const stderr = capture(process.stderr);
  const output = () => `${stdout.text()}\n${stderr.text()}`;
  const running = main(['node', 'calls-connector', 'run', '--config', file]);
  if (stopWhen !== undefined) {
    await eventually(() => output().includes(stopWhen), 60_000, `output containing "${stopWhen}"`);
    process.emit('SIGTERM');
  }
  const code = await running;
  return { code, output: output() };
}

describe('secrets in the output of a failed run', () => {
  let sandbox: RunningSandbox;
  afterEach(async () => {
    vi.restoreAllMocks();
    process.exitCode = undefined;
    await sandbox.close();
  });

  it('a SASL login the broker refuses is waited out (no crash loop) and prints neither the SASL password nor the registry userinfo', async () => {
    sandbox = await startTestSandbox();
    const document = connectorDocument(sandbox);
    const kafka = document.kafka as Record<string, unknown>;
    const registry = document.schemaRegistry as { url: string };
    const { output } = await runWith(
      {
        ...document,
        auth: { staticToken: STATIC_TOKEN },
        kafka: { ...kafka, sasl: { mechanism: 'plain', username: 'svc', password: SASL_PASSWORD } },
        schemaRegistry: { url: withUserinfo(registry.url) },
        // The local stack is plaintext: accepted explicitly, so the start-up warning path is exercised too.
        security: { allowInsecureKafka: true },
        logging: { level: 'trace', format: 'json' },
      },
      'the Kafka cluster is not available yet; waiting for it',
    );
    expect(output).toContain('insecure setting accepted: kafka.sasl without kafka.ssl');
    expect(output).toContain('KAFKA_UNAVAILABLE');
    for (const secret of [SASL_PASSWORD, REGISTRY_PASSWORD, STATIC_TOKEN])
      expect(output).not.toContain(secret);
  });

  it('a static token the API rejects stops every location with a message saying so, and is never printed', async () => {
    sandbox = await startTestSandbox();
    const document = connectorDocument(sandbox);
    const registry = document.schemaRegistry as { url: string };
    const { code, output } = await runWith({
      ...document,
      auth: { staticToken: STATIC_TOKEN },
      schemaRegistry: { url: withUserinfo(registry.url) },
      logging: { level: 'trace', format: 'json' },
    });
    expect(code).toBe(ExitCode.FAILURE);
    expect(output).toContain(
      '[ALL_LOCATIONS_STOPPED] every location is stopped by an error only a restart can fix:',
    );
    expect(output).toContain('AUTH_STATIC_TOKEN_REJECTED');
    for (const secret of [REGISTRY_PASSWORD, STATIC_TOKEN]) expect(output).not.toContain(secret);
  });

  it('a wrong registry path is named as such, without the credentials written in the URL', async () => {
    sandbox = await startTestSandbox();
    const document = connectorDocument(sandbox);
    const registry = document.schemaRegistry as { url: string };
    const { code, output } = await runWith({
      ...document,
      schemaRegistry: { url: withUserinfo(registry.url.replace(/\/apis\/ccompat\/v7$/, '/wrong/path')) },
      logging: { level: 'trace', format: 'json' },
    });
    expect(code).toBe(ExitCode.FAILURE);
    expect(output).toContain('[SCHEMA_REGISTRY_URL_WRONG]');
    expect(output).not.toContain(REGISTRY_PASSWORD);
  });
});
