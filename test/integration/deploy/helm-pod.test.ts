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
 * restart, becomes ready (/readyz: Kafka, the registry, the grant, and `running` or the assignment), publishes
 * every call of the sandbox, passes the chart's `helm test` pod (run the same way), and stops within its pod's
 * grace period when sent SIGTERM.
 *
 * With the webhook receiver (single mode, two pods of one connector, as `standby: true` runs them): the writer
 * takes a delivery signed with the key of the webhook Secret on the receiver's own port and refuses one signed
 * with another key; once a second pod fences it, it stands by and stays READY (/readyz 200: `kubectl rollout
 * status` and `helm upgrade --wait` complete) while GET /status says `role: standby`; since the webhook Service
 * routes to every ready pod, the standby answers a delivery 503 with Retry-After, and the sender's retry of the
 * same delivery is taken by the writer.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kafka } from 'kafkajs';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify } from 'yaml';
import { parseConfig } from '../../../src/config/load.js';
import { freeLoopbackPort } from '../../../src/demo/free-port.js';
import {
  standardWebhooksKey,
  standardWebhooksSignature,
} from '../../../src/webhooks/signature/standard-webhooks.js';
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

  /**
   * The chart's values for this sandbox and the test stack, in `mode`, under a connector name and topics of its
   * own (or those of `options.like`, for a second pod of one connector), with the webhook receiver on
   * `options.webhookPort`.
   */
  async function rendered(
    mode: 'single' | 'distributed',
    metricsPort: number,
    options: { like?: readonly K8sObject[]; webhookPort?: number } = {},
  ): Promise<K8sObject[]> {
    // The sandbox, Kafka and registry settings the other integration tests use; the CA from a mounted Secret.
    const {
      api,
      sources,
      kafka: kafkaSection,
      schemaRegistry,
    } = connectorDocument(oauth.sandbox, { api: { pageSize: 20, caFile: `${CA_MOUNT}/ca.crt` } });
    const like =
      options.like === undefined
        ? undefined
        : (parseYaml(configYamlOf(options.like)) as {
            connector: { name: string };
            kafka: object;
          });
    const values = {
      mode,
      replicas: 1,
      config: {
        connector: { name: like?.connector.name ?? uniqueName(`helm-${mode}`) },
        api,
        oauth: { clientId: oauth.clientId, redirectUri: oauth.redirectUri },
        sources,
        kafka: like?.kafka ?? { ...(kafkaSection as Record<string, unknown>), offsetsTopicPartitions: 3 },
        schemaRegistry,
        // A location waiting for a grant looks for it again after a second, not the default minute.
        poll: { intervalMs: 500, stoppedRetry: { initialDelayMs: 1000, maxDelayMs: 2000 } },
        logging: { level: 'info', format: 'json' },
        // With the receiver on, locations are polled every reconcile interval (15 min by default).
        ...(options.webhookPort !== undefined && { webhooks: { reconcileIntervalMs: 1000 } }),
      },
      secrets: {
        clientSecret: { name: 'calls-oauth', key: 'client-secret' },
        tokenStoreKey: { name: 'calls-oauth', key: 'token-key' },
        files: [{ name: 'sandbox-ca', mountPath: CA_MOUNT }],
      },
      metrics: { port: metricsPort },
      shutdownTimeoutSeconds: 10,
      authLogin: { enabled: true, port: Number(new URL(oauth.redirectUri).port), timeoutSeconds: 60 },
      ...(options.webhookPort !== undefined && {
        webhooks: { enabled: true, port: options.webhookPort, existingSecret: 'calls-webhooks' },
      }),
    };
    return renderChart({ values: [await valuesFileOf(values)] });
  }

  const secrets = (): TestSecrets => ({
    'calls-oauth': { 'client-secret': oauth.env.SANDBOX_SECRET, 'token-key': oauth.env.TOKEN_KEY },
    'sandbox-ca': { 'ca.crt': oauth.sandbox.caCertPem ?? '' },
    'calls-webhooks': { 'webhook-secret': WEBHOOK_SECRET },
  });

  /** (2) The auth-login Job: the person opens the URL it prints; the service redirects to its listener. */
  async function authorize(objects: readonly K8sObject[]): Promise<void> {
    const login = start(await materialise(objects, only(objects, 'Job', '-auth-login'), secrets()));
    const url = await explained(printed(login, /^\s+(https:\/\/\S+)$/m), login);
    const certificate = await readFile(await explained(printed(login, /written to (\S+?)\)/), login), 'utf8');
    expect(certificate, 'the one-off certificate is written under the /tmp emptyDir').toContain(
      'BEGIN CERTIFICATE',
    );
    await browse(url, oauth.sandbox.caCertPem ?? '', certificate);
    expect(await explained(login.exited, login), login.output()).toBe(0);
    expect(login.output()).toContain('Authorized. The grant is stored.');
  }

  it.each([
    ['single', 'running'],
    ['distributed', 'assignment'],
  ] as const)(
    'in %s mode: starts not ready, is authorized by its auth-login Job, becomes ready (%s), publishes every call, passes helm test and stops in its grace period',
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

      // (2) The auth-login Job stores the grant.
      await authorize(objects);

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

      // `helm test`: the chart's test pod, run the same way, checks this pod and the calls topic. Its one
      // change: the headless metrics Service's name becomes this host (no cluster DNS here).
      const testPod = await materialise(objects, only(objects, 'Pod', '-test'), secrets());
      const serviceHost = testPod.argv.indexOf('calls-connector-metrics');
      expect(serviceHost, 'the test pod names the headless metrics Service').toBeGreaterThan(0);
      testPod.argv[serviceHost] = 'localhost';
      const helmTest = start(testPod);
      expect(await explained(helmTest.exited, helmTest), helmTest.output()).toBe(0);
      expect(helmTest.output()).toContain(`:${metricsPort}: /readyz 200, /status RUNNING`);
      expect(helmTest.output()).toMatch(
        new RegExp(`calls topic ${config.kafka.topic}: [1-9]\\d* partition\\(s\\)`),
      );

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

  it("with the webhook receiver and a standby: the writer takes deliveries signed with the Secret's key and refuses others; the standby is ready, says `standby` on /status and sends deliveries back for a retry", async () => {
    const location = oauth.sandbox.locations[0] ?? '';
    const ports = async () => ({ metrics: await freeLoopbackPort(), webhooks: await freeLoopbackPort() });
    const readyz = (port: number) => status(`http://127.0.0.1:${port}/readyz`);
    const roleOf = async (port: number) =>
      (
        JSON.parse((await status(`http://127.0.0.1:${port}/status`)).body) as {
          instance?: { role: string };
        }
      ).instance?.role;

    // Pod A, authorized through the Job, becomes the writer and takes a delivery signed with the Secret's key.
    const first = await ports();
    const objectsA = await rendered('single', first.metrics, { webhookPort: first.webhooks });
    const a = start(await materialise(objectsA, only(objectsA, 'Deployment'), secrets()));
    await authorize(objectsA);
    await explained(
      eventually(async () => (await readyz(first.metrics)).code === 200, 90_000, 'A ready'),
      a,
    );
    expect(await roleOf(first.metrics)).toBe('writer');
    expect((await deliver(first.webhooks, location)).code, a.output().slice(-2000)).toBe(202);
    // Signed with a key other than the Secret's: refused, so the Secret's key is what the receiver verifies.
    const forged = await deliver(first.webhooks, location, { secret: OTHER_WEBHOOK_SECRET });
    expect(forged.code, a.output().slice(-2000)).toBe(401);
    // The values set poll.intervalMs beside the receiver: the start-up log says it is ignored, and what applies.
    expect(a.output()).toContain('"setting":"poll.intervalMs","instead":"webhooks.reconcileIntervalMs"');
    // Calls keep changing, so that A writes and meets the fencing (an idle writer learns of it at its next write).
    oauth.sandbox.admin.setLive({ updatesPerSecond: 4, createsPerSecond: 0 });

    // Pod B of the same connector (a rolling update's new pod, or the standby's replacement) fences A: B writes,
    // A stands by. Both are ready: readiness says a pod serves its purpose, and a standby's is to take over.
    const second = await ports();
    const objectsB = await rendered('single', second.metrics, {
      like: objectsA,
      webhookPort: second.webhooks,
    });
    const b = start(await materialise(objectsB, only(objectsB, 'Deployment'), secrets()));
    await explained(
      eventually(async () => (await readyz(second.metrics)).code === 200, 90_000, 'B ready'),
      b,
    );
    await explained(
      eventually(async () => (await roleOf(first.metrics)) === 'standby', 60_000, 'A standing by'),
      a,
    );
    // /readyz caches its verdict for 5 s: wait until it reports the stand-down, then it must still be 200.
    let standbyReadyz = { code: 0, body: '' };
    await explained(
      eventually(
        async () => {
          standbyReadyz = await readyz(first.metrics);
          return standbyReadyz.body.includes('"name":"running","ok":true,"detail":"standing by');
        },
        30_000,
        "A's /readyz reporting the stand-down",
      ),
      a,
    );
    expect(standbyReadyz.code, standbyReadyz.body).toBe(200);
    expect(await roleOf(second.metrics)).toBe('writer');

    // The webhook Service routes to both ready pods: the standby refuses a delivery for a retry (503 and
    // Retry-After), and the same delivery retried (same id) is taken by the writer.
    const delivery = signedDelivery(location);
    const atStandby = await post(first.webhooks, delivery);
    expect(atStandby.code, a.output().slice(-2000)).toBe(503);
    expect(atStandby.retryAfter).toBe('5');
    expect((await post(second.webhooks, delivery)).code, b.output().slice(-2000)).toBe(202);

    oauth.sandbox.admin.setLive(false);
    for (const pod of [b, a]) {
      pod.child.kill('SIGTERM');
      expect(await explained(pod.exited, pod)).toBe(0);
    }
  });
});

/** The config.yaml of the rendered ConfigMap. */
function configYamlOf(objects: readonly K8sObject[]): string {
  const configMap = objects.find(
    (o) => o.kind === 'ConfigMap' && o.metadata.name.endsWith('calls-connector'),
  );
  const text = (configMap?.['data'] as Record<string, string> | undefined)?.['config.yaml'];
  if (text === undefined) throw new Error('no rendered config.yaml');
  return text;
}

/** The signing secret of the test's webhook Secret (Standard Webhooks: whsec_ and base64 key bytes). */
const WEBHOOK_SECRET = `whsec_${Buffer.from('helm-pod test webhook signing key').toString('base64')}`;

/** Another signing secret than the Secret's: a delivery signed with it is forged. */
const OTHER_WEBHOOK_SECRET = `whsec_${Buffer.from('not the key of the webhook Secret').toString('base64')}`;

interface Delivery {
  headers: Record<string, string>;
  body: string;
}

/** A `call.updated` delivery for a call of `location`, signed as the API would sign it (with `secret`). */
function signedDelivery(location: string, secret = WEBHOOK_SECRET): Delivery {
  const body = JSON.stringify({ type: 'call.updated', data: { uid: randomUUID(), locationUid: location } });
  const id = `msg_${randomUUID()}`;
  const timestamp = Math.floor(Date.now() / 1000);
  const signature = standardWebhooksSignature(standardWebhooksKey(secret), id, timestamp, Buffer.from(body));
  return {
    headers: {
      'content-type': 'application/json',
      'webhook-id': id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signature,
    },
    body,
  };
}

/** Posts `delivery` to the receiver's path. */
async function post(
  port: number,
  delivery: Delivery,
): Promise<{ code: number; body: string; retryAfter: string | undefined }> {
  const response = await request(`http://127.0.0.1:${port}/webhooks/calls`, {
    method: 'POST',
    headers: delivery.headers,
    body: delivery.body,
  });
  const retryAfter = response.headers['retry-after'];
  return {
    code: response.statusCode,
    body: await response.body.text(),
    retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
  };
}

/** A new delivery for a call of `location`, signed with `options.secret` (default: the Secret's). */
function deliver(port: number, location: string, options: { secret?: string } = {}) {
  return post(port, signedDelivery(location, options.secret));
}

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
