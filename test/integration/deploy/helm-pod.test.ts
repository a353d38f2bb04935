/**
 * The pod as the Helm chart describes it (docs/kubernetes.md), without a cluster: the chart is rendered by a real
 * `helm` with values for a sandbox calls API and the test stack's Kafka, and each container (the Deployment's,
 * then the auth-login Job's) runs as a process with its rendered command, arguments and environment, its
 * ConfigMap and test Secrets materialised at their mount paths (test/support/pod.ts). Both modes.
 *
 * In the documented order: after `helm install` the connector's pod is alive but not ready, for want of a grant.
 * The first authorization goes through the Job as a person would drive it: the Job prints the URL and the
 * certificate it generated, the "browser" (the sandbox's user auto-approves) follows the URL and is redirected to
 * the Job's listener, and the Job stores the grant in the Kafka token store. The running pod finds it without a
 * restart, becomes ready (/readyz: Kafka, the registry, the grant, and the writer or the assignment), publishes
 * every call of the sandbox, and stops within its pod's grace period when sent SIGTERM.
 */
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kafka } from 'kafkajs';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseConfig } from '../../../src/config/load.js';
import { freeLoopbackPort } from '../../../src/demo/free-port.js';
import {
  connectorDocument,
  publishedCalls,
  startOAuthSandbox,
  type OAuthSandbox,
} from '../../support/connector.js';
import { doubledAndMissing } from '../../support/connector-process.js';
import { only, renderChart, type K8sObject } from '../../support/helm.js';
import { eventually, testKafka } from '../../support/kafka.js';
import {
  materialise,
  runContainer,
  type MaterialisedContainer,
  type RunningContainer,
  type TestSecrets,
} from '../../support/pod.js';
import { uniqueName } from '../../support/stack.js';

const CA_MOUNT = '/var/run/secrets/calls-connector/sandbox-ca';

describe('the pod the Helm chart describes', () => {
  let oauth: OAuthSandbox;
  let kafka: Kafka;
  const running: RunningContainer[] = [];

  beforeAll(async () => {
    oauth = await startOAuthSandbox(uniqueName('helm-client'), {
      data: { seed: 34, locations: 3, callsPerLocation: 25, privateRatio: 0.3 },
    });
    kafka = testKafka('helm-pod-test');
  });

  afterAll(async () => {
    for (const container of running) {
      if (container.child.exitCode === null && container.child.signalCode === null) {
        container.child.kill('SIGKILL');
        await container.exited;
      }
    }
    await oauth?.sandbox.close();
  });

  const start = (container: MaterialisedContainer): RunningContainer => {
    const started = runContainer(container);
    running.push(started);
    return started;
  };

  /** The chart's values for this sandbox and the test stack, in `mode`, under a connector name of its own. */
  async function rendered(mode: 'single' | 'distributed', metricsPort: number): Promise<K8sObject[]> {
    // The sandbox, Kafka and registry settings the other integration tests use; the CA from a mounted Secret.
    const {
      api,
      sources,
      kafka: kafkaSection,
      schemaRegistry,
    } = connectorDocument(oauth.sandbox, { api: { pageSize: 20, caFile: `${CA_MOUNT}/ca.crt` } });
    const values = {
      mode,
      replicas: 1,
      config: {
        connector: { name: uniqueName(`helm-${mode}`) },
        api,
        oauth: { clientId: oauth.clientId, redirectUri: oauth.redirectUri },
        sources,
        kafka: { ...(kafkaSection as Record<string, unknown>), offsetsTopicPartitions: 3 },
        schemaRegistry,
        // A location waiting for a grant looks for it again after a second, not the default minute.
        poll: { intervalMs: 500, stoppedRetry: { initialDelayMs: 1000, maxDelayMs: 2000 } },
        logging: { level: 'info', format: 'json' },
      },
      secrets: {
        clientSecret: { name: 'calls-oauth', key: 'client-secret' },
        tokenStoreKey: { name: 'calls-oauth', key: 'token-key' },
        files: [{ name: 'sandbox-ca', mountPath: CA_MOUNT }],
      },
      metrics: { port: metricsPort },
      shutdownTimeoutSeconds: 10,
      authLogin: { enabled: true, port: Number(new URL(oauth.redirectUri).port), timeoutSeconds: 60 },
    };
    return renderChart({ values: [await valuesFileOf(values)] });
  }

  const secrets = (): TestSecrets => ({
    'calls-oauth': { 'client-secret': oauth.env.SANDBOX_SECRET, 'token-key': oauth.env.TOKEN_KEY },
    'sandbox-ca': { 'ca.crt': oauth.sandbox.caCertPem ?? '' },
  });

  it.each([
    ['single', 'writer'],
    ['distributed', 'assignment'],
  ] as const)(
    'in %s mode: starts not ready, is authorized by its auth-login Job, becomes ready (%s), publishes every call and stops in its grace period',
    async (mode, modeCheck) => {
      const { sandbox } = oauth;
      const metricsPort = await freeLoopbackPort();
      const objects = await rendered(mode, metricsPort);

      // (1) `helm install`: the connector's pod starts, alive but not ready, waiting for a grant.
      const deployment = only(objects, 'Deployment');
      const pod = await materialise(objects, deployment, secrets());
      const connector = start(pod);
      const base = `http://127.0.0.1:${metricsPort}`;
      await explained(
        eventually(
          async () => {
            const readyz = await status(`${base}/readyz`);
            return readyz.code === 503 && readyz.body.includes('"grant:default","ok":false');
          },
          60_000,
          'not ready for want of a grant',
        ),
        connector,
      );
      expect(await status(`${base}/healthz`)).toMatchObject({ code: 200 });

      // (2) The auth-login Job: the person opens the URL it prints; the service redirects to its listener.
      const login = start(await materialise(objects, only(objects, 'Job', '-auth-login'), secrets()));
      const url = await explained(printed(login, /^\s+(https:\/\/\S+)$/m), login);
      const certificate = await readFile(
        await explained(printed(login, /written to (\S+?)\)/), login),
        'utf8',
      );
      expect(certificate, 'the one-off certificate is written under the /tmp emptyDir').toContain(
        'BEGIN CERTIFICATE',
      );
      await browse(url, sandbox.caCertPem ?? '', certificate);
      expect(await explained(login.exited, login), login.output()).toBe(0);
      expect(login.output()).toContain('Authorized. The grant is stored.');

      // (3) The running pod finds the grant in the Kafka token store, without a restart, and becomes ready:
      // what the mode means by it, the writer (single) or an assignment (distributed).
      await explained(
        eventually(async () => (await status(`${base}/readyz`)).code === 200, 90_000, 'ready'),
        connector,
      );
      expect((await status(`${base}/readyz`)).body).toContain(`"${modeCheck}"`);

      const config = parseConfig(pod.config, pod.env);
      expect(config.connector.mode).toBe(mode);
      expect(config.oauth?.store).toMatchObject({ type: 'kafka' });
      const truth = sandbox.locations.flatMap((location) => sandbox.admin.truth(location));
      const published = await publishedCalls(kafka, config, truth, 90_000);
      expect(doubledAndMissing(published, truth)).toEqual({ doubled: [], missing: [] });

      // (4) SIGTERM, as the kubelet sends it: a graceful stop (exit 0) within terminationGracePeriodSeconds.
      const graceSeconds = (
        deployment['spec'] as { template: { spec: { terminationGracePeriodSeconds: number } } }
      ).template.spec.terminationGracePeriodSeconds;
      const stopping = Date.now();
      connector.child.kill('SIGTERM');
      expect(await explained(connector.exited, connector)).toBe(0);
      expect(Date.now() - stopping).toBeLessThan(graceSeconds * 1000);
    },
  );
});

/** Fails with the container's output when `step` fails: the assertion alone rarely says why. */
async function explained<T>(step: Promise<T>, container: RunningContainer): Promise<T> {
  try {
    return await step;
  } catch (error) {
    throw new Error(`${String(error)}\n--- container output ---\n${container.output().slice(-4000)}`, {
      cause: error,
    });
  }
}

/** The values as a file for `helm template -f`. */
async function valuesFileOf(values: object): Promise<string> {
  const file = join(await mkdtemp(join(tmpdir(), 'calls-helm-values-')), 'values.yaml');
  await writeFile(file, stringify(values));
  return file;
}

/** The first match of `pattern` in the container's output, once it is printed (its first group). */
async function printed(container: RunningContainer, pattern: RegExp): Promise<string> {
  let found: string | undefined;
  await eventually(
    () => {
      found = pattern.exec(container.output())?.[1];
      return found !== undefined || container.child.exitCode !== null;
    },
    30_000,
    `output matching ${pattern}`,
  );
  if (found === undefined) throw new Error(`the container exited without printing ${pattern}`);
  return found;
}

/** What a browser does: the authorization URL (auto-approved: a redirect), then the redirect to the listener. */
async function browse(url: string, sandboxCa: string, listenerCertificate: string): Promise<void> {
  const dispatcher = new Agent({ connect: { ca: [sandboxCa, listenerCertificate] } });
  try {
    const consent = await request(url, { dispatcher });
    await consent.body.dump();
    expect(consent.statusCode, 'the sandbox approves at once').toBe(302);
    const callback = await request(String(consent.headers.location), { dispatcher });
    await callback.body.dump();
    expect(callback.statusCode).toBe(200);
  } finally {
    await dispatcher.close();
  }
}

async function status(url: string): Promise<{ code: number; body: string }> {
  try {
    const response = await request(url);
    return { code: response.statusCode, body: await response.body.text() };
  } catch {
    return { code: 0, body: '' };
  }
}
