/**
 * The Helm chart (deploy/helm/calls-connector, docs/kubernetes.md) rendered by a real `helm` for every documented
 * values profile: linted, every object validated strictly (kubeconform -strict, unknown fields refused) against
 * the Kubernetes and Prometheus Operator schemas vendored in tools/helm/schemas/, the pod's
 * hardening checked object by object, the configuration accepted by the connector's own validation, the
 * monitoring objects the ones config/ holds; and the values the chart must refuse, refused with a message that
 * says what to do; the subchart keys, the helm test hook, the chart's metadata. No cluster: what a cluster would add (scheduling, probes run by a kubelet) is not claimed.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify } from 'yaml';
import { parseConfig } from '../../../src/config/load.js';
import { livePollIntervalMs } from '../../../src/config/sections/webhooks.js';
import {
  CHART,
  REPO_ROOT,
  helm,
  lintChart,
  only,
  renderChart,
  renderRefusal,
  templateArgs,
  type K8sObject,
  type PodContainer as Container,
  type PodSpec,
} from '../../support/helm.js';
import { schemaProblems } from '../../support/k8s-schemas.js';

interface Profile {
  file: string;
  mode: 'single' | 'distributed';
  replicas: number;
  tokenStore: 'kafka' | 'file';
  /**
   * Kinds the profile renders beyond the ConfigMap, ServiceAccount, Deployment and PodDisruptionBudget, and the
   * `helm test` hook's ConfigMap, Pod and headless metrics Service.
   */
  extraKinds: string[];
}

const PROFILES: Profile[] = [
  {
    file: 'profiles/single.yaml',
    mode: 'single',
    replicas: 1,
    tokenStore: 'kafka',
    extraKinds: ['ConfigMap', 'PodMonitor', 'PrometheusRule'],
  },
  { file: 'profiles/single-standby.yaml', mode: 'single', replicas: 2, tokenStore: 'kafka', extraKinds: [] },
  {
    file: 'profiles/distributed.yaml',
    mode: 'distributed',
    replicas: 6,
    tokenStore: 'kafka',
    extraKinds: ['ConfigMap', 'Ingress', 'NetworkPolicy', 'PodMonitor', 'PrometheusRule', 'Service'],
  },
  { file: 'profiles/file-store.yaml', mode: 'single', replicas: 1, tokenStore: 'file', extraKinds: ['Job'] },
];

/** The labels of the release's `helm test` pod, which the NetworkPolicy admits to the metrics port. */
const HELM_TEST_POD = {
  'app.kubernetes.io/name': 'calls-connector',
  'app.kubernetes.io/instance': 'calls-connector',
  'app.kubernetes.io/component': 'helm-test',
};

const profileValues = (file: string) => `deploy/helm/calls-connector/${file}`;

const podSpecOf = (object: K8sObject): PodSpec =>
  object.kind === 'Pod'
    ? (object['spec'] as PodSpec)
    : (object['spec'] as { template: { spec: PodSpec } }).template.spec;
const podLabelsOf = (object: K8sObject): Record<string, string> =>
  (object['spec'] as { template: { metadata: { labels: Record<string, string> } } }).template.metadata.labels;
const specOf = <T>(object: K8sObject): T => object['spec'] as T;

/** The rendered connector configuration, parsed (not yet validated). */
function configDocument(objects: readonly K8sObject[]): Record<string, unknown> {
  const configMap = objects.find(
    (o) => o.kind === 'ConfigMap' && (o['data'] as Record<string, string>)['config.yaml'] !== undefined,
  );
  if (configMap === undefined) throw new Error('no ConfigMap with config.yaml rendered');
  return parseYaml((configMap['data'] as Record<string, string>)['config.yaml'] ?? '') as Record<
    string,
    unknown
  >;
}

/** A stand-in for a Secret's value, in the form its variable needs. */
function secretStandIn(name: string): string {
  if (name.endsWith('TOKEN_KEY')) return 'a'.repeat(64);
  if (name.startsWith('CALLS_CONNECTOR_WEBHOOK_SECRET_'))
    return `whsec_${Buffer.from('a webhook signing secret').toString('base64')}`;
  return 'from-a-secret';
}

function mebibytes(quantity: string): number {
  const match = /^(\d+)(Mi|Gi)$/.exec(quantity);
  if (match === null) throw new Error(`unexpected memory quantity ${quantity}`);
  return Number(match[1]) * (match[2] === 'Gi' ? 1024 : 1);
}

/** What the image runs (Dockerfile): its ENTRYPOINT, CMD, user and heap bound. */
function dockerfileFacts(): { entrypoint: string[]; cmd: string[]; user: string; heapMiB: number } {
  const dockerfile = readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8');
  const json = (instruction: string) =>
    JSON.parse(new RegExp(`^${instruction} (\\[.*\\])$`, 'm').exec(dockerfile)?.[1] ?? 'null') as string[];
  return {
    entrypoint: json('ENTRYPOINT'),
    cmd: json('CMD'),
    user: /^USER (\S+)$/m.exec(dockerfile)?.[1] ?? '',
    heapMiB: Number(/--max-old-space-size=(\d+)/.exec(dockerfile)?.[1]),
  };
}

/** Every check of a pod template that holds for every pod the chart runs. */
function hardeningProblems(object: K8sObject): string[] {
  const label = `${object.kind}/${object.metadata.name}`;
  const pod = podSpecOf(object);
  const problems: string[] = [];
  const expect = (ok: boolean, what: string) => {
    if (!ok) problems.push(`${label}: ${what}`);
  };
  expect(pod.securityContext?.['runAsNonRoot'] === true, 'pod runAsNonRoot is not true');
  expect(
    pod.securityContext?.seccompProfile?.type === 'RuntimeDefault',
    'pod seccompProfile is not RuntimeDefault',
  );
  expect(pod.automountServiceAccountToken === false, 'the service account token is mounted');
  expect(!pod.hostNetwork && !pod.hostPID && !pod.hostIPC, 'the pod shares a host namespace');
  expect(
    (pod.volumes ?? []).every((v) => v.hostPath === undefined),
    'a hostPath volume is mounted',
  );
  for (const volume of pod.volumes ?? [])
    if (volume.secret !== undefined)
      expect(
        volume.secret.defaultMode !== undefined && (volume.secret.defaultMode & 0o007) === 0,
        `Secret volume ${volume.name}: readable by others (defaultMode ${volume.secret.defaultMode})`,
      );
  for (const container of [...pod.containers, ...(pod.initContainers ?? [])]) {
    const context = container.securityContext ?? {};
    const name = `container ${container.name}`;
    expect(context['readOnlyRootFilesystem'] === true, `${name}: readOnlyRootFilesystem is not true`);
    expect(context['allowPrivilegeEscalation'] === false, `${name}: allowPrivilegeEscalation is not false`);
    expect(context['privileged'] !== true, `${name}: privileged`);
    expect(context['runAsNonRoot'] === true, `${name}: runAsNonRoot is not true`);
    expect(
      JSON.stringify(context.capabilities?.drop) === '["ALL"]' && context.capabilities?.add === undefined,
      `${name}: capabilities are not exactly drop [ALL]`,
    );
    expect(
      (context['seccompProfile'] as { type?: string } | undefined)?.type === 'RuntimeDefault',
      `${name}: seccompProfile is not RuntimeDefault`,
    );
    const limit = container.resources?.limits?.memory;
    expect(limit !== undefined, `${name}: no memory limit`);
    const nodeOptions = container.env?.find((e) => e.name === 'NODE_OPTIONS')?.value;
    if (limit !== undefined)
      expect(
        nodeOptions === `--max-old-space-size=${mebibytes(limit) / 2}`,
        `${name}: NODE_OPTIONS ${nodeOptions} is not half of the ${limit} memory limit`,
      );
    expect(
      (container.volumeMounts ?? []).some((m) => m.mountPath === '/tmp'),
      `${name}: no writable /tmp on a read-only root filesystem`,
    );
    for (const variable of container.env ?? [])
      expect(
        variable.name === 'NODE_OPTIONS' || variable.valueFrom?.secretKeyRef !== undefined,
        `${name}: ${variable.name} is not from a Secret (only NODE_OPTIONS has a literal value)`,
      );
  }
  return problems;
}

describe.each(PROFILES)('the Helm chart with $file', (profile) => {
  const values = [profileValues(profile.file)];
  const objects = renderChart({ values });
  const deployment = only(objects, 'Deployment');
  const pod = podSpecOf(deployment);
  const connector = pod.containers[0] as Container;
  const document = configDocument(objects);

  it('passes helm lint --strict', () => {
    const lint = lintChart({ values });
    expect(lint.status, lint.stdout + lint.stderr).toBe(0);
  });

  it('renders the objects of its profile, each valid against the Kubernetes and Prometheus Operator schemas', () => {
    expect(objects.map((o) => o.kind).sort()).toEqual(
      [
        'ConfigMap',
        'Deployment',
        'PodDisruptionBudget',
        'ServiceAccount',
        ...['ConfigMap', 'Pod', 'Service'],
        ...profile.extraKinds,
      ].sort(),
    );
    expect(schemaProblems(objects)).toEqual([]);
  });

  it("renders no Secret, and no Service but the webhook receiver's and a headless one over the metrics port (no cluster IP: the helm test reaches each pod)", () => {
    expect(objects.filter((o) => o.kind === 'Secret')).toEqual([]);
    const services = objects.filter((o) => o.kind === 'Service');
    expect(services.map((o) => o.metadata.name).sort()).toEqual(
      document['webhooks'] === undefined
        ? ['calls-connector-metrics']
        : ['calls-connector-metrics', 'calls-connector-webhooks'],
    );
    const metrics = specOf<{ clusterIP: string; ports: unknown[]; selector: Record<string, string> }>(
      only(services, 'Service', '-metrics'),
    );
    expect(metrics.clusterIP).toBe('None');
    expect(metrics.ports).toEqual([
      {
        name: 'metrics',
        port: (document['metrics'] as { port: number }).port,
        targetPort: 'metrics',
        protocol: 'TCP',
      },
    ]);
    expect(metrics.selector['app.kubernetes.io/component']).toBe('connector');
    if (document['webhooks'] !== undefined)
      expect(specOf<{ ports: unknown[] }>(only(services, 'Service', '-webhooks')).ports).toEqual([
        expect.objectContaining({ targetPort: 'webhooks' }),
      ]);
  });

  it('runs every pod hardened: non-root, read-only root, no capabilities, RuntimeDefault seccomp, heap from the memory limit', () => {
    const pods = objects.filter((o) => ['Deployment', 'Job', 'Pod'].includes(o.kind));
    expect(pods.map((o) => o.kind)).toContain('Pod');
    expect(pods.flatMap(hardeningProblems)).toEqual([]);
    // The image's user: `node`, uid 1000 in the node images.
    expect(dockerfileFacts().user).toBe('node');
    for (const o of pods) expect(podSpecOf(o).securityContext?.['runAsUser']).toBe(1000);
  });

  it('runs what the image runs, with the configuration of its ConfigMap', () => {
    const image = dockerfileFacts();
    expect(connector.command).toEqual(image.entrypoint);
    expect(connector.args).toEqual(image.cmd);
    const configMount = connector.volumeMounts?.find((m) => m.name === 'config');
    expect(configMount).toMatchObject({ mountPath: '/etc/calls-connector', readOnly: true });
  });

  it('renders a configuration the connector and `validate-config` accept, in its mode, with every secret from a Secret', () => {
    const secretVariables = (connector.env ?? []).filter((e) => e.valueFrom?.secretKeyRef !== undefined);
    const env = Object.fromEntries(secretVariables.map((e) => [e.name, secretStandIn(e.name)]));
    const config = parseConfig(document, env);
    expect(config.connector.mode).toBe(profile.mode);
    expect(config.oauth?.store.type).toBe(profile.tokenStore);
    expect(config.metrics).toMatchObject({ enabled: true, host: '0.0.0.0' });
    // Every ${NAME} the config names is a variable the container sets from a Secret, and nothing else is;
    // the token key and the webhook secrets are named by keyEnv and secretEnv instead.
    const referenced = [...JSON.stringify(document).matchAll(/\$\{([A-Z0-9_]+)\}/g)].map((m) => m[1]);
    const byName = secretVariables.map((e) => e.name);
    const webhookSecrets = byName.filter((name) => name.startsWith('CALLS_CONNECTOR_WEBHOOK_SECRET_'));
    expect(new Set(referenced)).toEqual(
      new Set(
        byName.filter((name) => name !== 'CALLS_CONNECTOR_TOKEN_KEY' && !webhookSecrets.includes(name)),
      ),
    );
    expect(config.oauth?.keyEnv).toBe('CALLS_CONNECTOR_TOKEN_KEY');
    if (config.webhooks.enabled) expect(config.webhooks.signature.secretEnv).toEqual(webhookSecrets);
    else expect(webhookSecrets).toEqual([]);
    // And the built CLI's own check, as a person would run it on the rendered ConfigMap.
    const file = join(mkdtempSync(join(tmpdir(), 'calls-helm-config-')), 'config.yaml');
    writeFileSync(file, stringify(document));
    const cli = join(REPO_ROOT, 'dist/src/cli/main.js');
    expect(existsSync(cli), `${cli} is missing: run \`npm run build\``).toBe(true);
    const validate = spawnSync(process.execPath, [cli, 'validate-config', '--config', file, '--quiet'], {
      encoding: 'utf8',
      env: { PATH: process.env['PATH'] ?? '', ...env },
      timeout: 30_000,
    });
    expect(validate.status, validate.stderr).toBe(0);
  });

  it('probes liveness on /healthz and readiness on /readyz, on the port the connector listens on', () => {
    const metricsPort = connector.ports?.find((p) => p.name === 'metrics')?.containerPort;
    expect(metricsPort).toBe((document['metrics'] as { port: number }).port);
    expect(connector.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
    expect(connector.startupProbe?.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
    expect(connector.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'metrics' });
  });

  it("gives a stopping pod longer than the connector's own shutdown (pages in flight, then the Kafka session)", () => {
    const shutdownMs = (document['poll'] as { shutdownTimeoutMs: number }).shutdownTimeoutMs;
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan((2 * shutdownMs) / 1000);
  });

  it('replaces pods one at a time, a new one before an old one goes, and lets a drain take one at a time', () => {
    const spec = specOf<{
      replicas: number;
      strategy: unknown;
      selector: { matchLabels: Record<string, string> };
    }>(deployment);
    expect(spec.replicas).toBe(profile.replicas);
    // Every running pod is ready, a standby too: none unavailable, so a rollout never goes below its count.
    expect(spec.strategy).toEqual({
      type: 'RollingUpdate',
      rollingUpdate: { maxSurge: 1, maxUnavailable: 0 },
    });
    const budget = specOf<{ maxUnavailable: number; unhealthyPodEvictionPolicy: string; selector: unknown }>(
      only(objects, 'PodDisruptionBudget'),
    );
    expect(budget).toMatchObject({ maxUnavailable: 1, unhealthyPodEvictionPolicy: 'AlwaysAllow' });
    expect(budget.selector).toEqual(spec.selector);
    expect(podLabelsOf(deployment)).toMatchObject(spec.selector.matchLabels);
  });

  it('mounts a volume for the token file only with the file store', () => {
    const tokens = pod.volumes?.find((v) => v.name === 'tokens');
    if (profile.tokenStore === 'file') expect(tokens?.persistentVolumeClaim).toBeDefined();
    else expect(tokens).toBeUndefined();
  });
});

describe('the Helm chart with monitoring on', () => {
  const objects = renderChart({ values: [profileValues('profiles/distributed.yaml')] });

  it('renders the alert rules of config/prometheus/alerts.yml as a PrometheusRule', () => {
    const alerts = parseYaml(
      readFileSync(join(REPO_ROOT, 'config/prometheus/alerts.yml'), 'utf8'),
    ) as unknown;
    expect(only(objects, 'PrometheusRule')['spec']).toEqual(alerts);
  });

  it('scrapes every pod as job="calls-connector", the job the alert rules select', () => {
    const alerts = readFileSync(join(REPO_ROOT, 'config/prometheus/alerts.yml'), 'utf8');
    expect(alerts).toContain('job="calls-connector"');
    const spec = specOf<{
      selector: { matchLabels: Record<string, string> };
      podMetricsEndpoints: Array<{ port: string; path: string; relabelings: unknown[] }>;
    }>(only(objects, 'PodMonitor'));
    expect(podLabelsOf(only(objects, 'Deployment'))).toMatchObject(spec.selector.matchLabels);
    expect(spec.podMetricsEndpoints).toEqual([
      expect.objectContaining({
        port: 'metrics',
        path: '/metrics',
        relabelings: [{ action: 'replace', targetLabel: 'job', replacement: 'calls-connector' }],
      }),
    ]);
  });

  it("ships the Grafana dashboard of config/grafana as a ConfigMap with the sidecar's label", () => {
    const dashboard = only(objects, 'ConfigMap', '-dashboard');
    expect(dashboard.metadata.labels).toMatchObject({ grafana_dashboard: '1' });
    const json = (dashboard['data'] as Record<string, string>)['calls-connector.json'] ?? '';
    expect(JSON.parse(json)).toEqual(
      JSON.parse(readFileSync(join(REPO_ROOT, 'config/grafana/calls-connector.json'), 'utf8')),
    );
  });

  it('admits ingress to the metrics port only, from the peers the values list', () => {
    const spec = specOf<{ policyTypes: string[]; ingress: Array<{ ports: unknown[]; from?: unknown[] }> }>(
      only(objects, 'NetworkPolicy'),
    );
    expect(spec.policyTypes).toEqual(['Ingress']);
    expect(spec.ingress).toHaveLength(2);
    expect(spec.ingress[0]?.ports).toEqual([{ port: 'metrics', protocol: 'TCP' }]);
    expect(spec.ingress[0]?.from).toEqual([
      { podSelector: { matchLabels: { ...HELM_TEST_POD } } },
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } },
    ]);
    // The profile's webhook receiver: its port, from the ingress controller's namespace only.
    expect(spec.ingress[1]?.ports).toEqual([{ port: 'webhooks', protocol: 'TCP' }]);
    expect(spec.ingress[1]?.from).toEqual([
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } } },
    ]);
  });
});

describe('the Helm chart defaults', () => {
  const chart = parseYaml(readFileSync(join(CHART, 'Chart.yaml'), 'utf8')) as { appVersion: string };
  const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
  const objects = renderChart({
    set: ['secrets.clientSecret.name=oauth', 'secrets.tokenStoreKey.name=oauth'],
  });

  it("run the image of the connector's version, with the image's own heap bound in its memory limit", () => {
    expect(chart.appVersion).toBe(pkg.version);
    const container = podSpecOf(only(objects, 'Deployment')).containers[0] as Container;
    expect((container as { image?: string }).image).toBe(`calls-connector:${pkg.version}`);
    expect(container.env?.find((e) => e.name === 'NODE_OPTIONS')?.value).toBe(
      `--max-old-space-size=${dockerfileFacts().heapMiB}`,
    );
  });

  it('roll the pods for a changed configuration, but not for a change of sources alone (the pods reload it)', () => {
    const of = (set: string[]) =>
      specOf<{ template: { metadata: { annotations: Record<string, string> } } }>(
        only(
          renderChart({
            set: ['secrets.clientSecret.name=oauth', 'secrets.tokenStoreKey.name=oauth', ...set],
          }),
          'Deployment',
        ),
      ).template.metadata.annotations['checksum/config'];
    const base = of([]);
    expect(of(['config.sources[0].locations[0]=6f1c2c36-9f59-4f3e-8a53-3c1f1e0c6a11'])).toBe(base);
    expect(of(['config.poll.intervalMs=9000'])).not.toBe(base);
  });

  it('keep the tokens in Kafka, in a topic of the connector name', () => {
    const store = (configDocument(objects)['oauth'] as { store: unknown }).store;
    expect(store).toEqual({ type: 'kafka', topic: 'calls-connector-tokens' });
  });
});

describe('the auth-login Job', () => {
  const objects = renderChart({ values: [profileValues('profiles/file-store.yaml')] });
  const job = only(objects, 'Job');
  const container = podSpecOf(job).containers[0] as Container;
  const deployment = podSpecOf(only(objects, 'Deployment')).containers[0] as Container;

  it("runs `auth login` with the connector's configuration, secrets and token store, listening on the pod's loopback", () => {
    expect(container.command).toEqual(deployment.command);
    expect(container.args).toEqual([
      'auth',
      'login',
      '--config',
      '/etc/calls-connector/config.yaml',
      '--no-open',
      '--listen',
      '127.0.0.1:8976',
      '--timeout',
      '600',
    ]);
    expect(container.env).toEqual(deployment.env);
    expect(container.volumeMounts).toEqual(deployment.volumeMounts);
    expect(specOf<{ backoffLimit: number }>(job).backoffLimit).toBe(0);
  });
});

describe('the Helm chart with the webhook receiver', () => {
  const single = [profileValues('profiles/single.yaml')];
  const withWebhooks = ['webhooks.enabled=true', 'webhooks.existingSecret=calls-webhooks'];
  const webhookPort = (objects: readonly K8sObject[]) =>
    (podSpecOf(only(objects, 'Deployment')).containers[0] as Container).ports?.find(
      (p) => p.name === 'webhooks',
    );

  it('renders nothing of it by default: no port, no Service, no Ingress, no secret, the receiver off', () => {
    const objects = renderChart({ values: single, set: ['networkPolicy.enabled=true'] });
    expect(objects.filter((o) => o.kind === 'Ingress' || o.metadata.name.endsWith('-webhooks'))).toEqual([]);
    expect(webhookPort(objects)).toBeUndefined();
    const env = (podSpecOf(only(objects, 'Deployment')).containers[0] as Container).env ?? [];
    expect(env.filter((e) => e.name.includes('WEBHOOK'))).toEqual([]);
    expect(configDocument(objects)['webhooks']).toBeUndefined();
    const policy = specOf<{ ingress: Array<{ ports: unknown[] }> }>(only(objects, 'NetworkPolicy'));
    expect(policy.ingress.map((rule) => rule.ports)).toEqual([[{ port: 'metrics', protocol: 'TCP' }]]);
  });

  describe('enabled (the distributed profile: Service, Ingress with TLS, NetworkPolicy)', () => {
    const objects = renderChart({ values: [profileValues('profiles/distributed.yaml')] });
    const deployment = only(objects, 'Deployment');
    const config = configDocument(objects);
    const webhooks = config['webhooks'] as { port: number; path: string; host: string };
    const service = only(objects, 'Service', '-webhooks');

    it('listens on a port of its own, on every interface, apart from the metrics port', () => {
      expect(webhooks).toMatchObject({ enabled: true, host: '0.0.0.0', port: 8465, path: '/webhooks/calls' });
      expect(webhookPort(objects)).toEqual({ name: 'webhooks', containerPort: 8465, protocol: 'TCP' });
      expect(webhooks.port).not.toBe((config['metrics'] as { port: number }).port);
    });

    it("exposes that port, and only it, through a Service of its own whose endpoints are the connector's ready pods", () => {
      const spec = specOf<{
        type: string;
        selector: Record<string, string>;
        ports: unknown[];
        publishNotReadyAddresses?: boolean;
      }>(service);
      expect(spec.type).toBe('ClusterIP');
      expect(spec.ports).toEqual([{ name: 'webhooks', port: 80, targetPort: 'webhooks', protocol: 'TCP' }]);
      expect(podLabelsOf(deployment)).toMatchObject(spec.selector);
      expect(spec.selector['app.kubernetes.io/component']).toBe('connector');
      // Only ready pods take deliveries (a single-mode standby is one, and answers them 503 for a retry).
      expect(spec.publishNotReadyAddresses).toBeUndefined();
      const connector = podSpecOf(deployment).containers[0] as Container;
      expect(connector.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'metrics' });
    });

    it('routes https://<host><webhooks.path> to that Service through an Ingress that terminates TLS', () => {
      const ingress = only(objects, 'Ingress', '-webhooks');
      expect(ingress.metadata.annotations).toMatchObject({
        'cert-manager.io/cluster-issuer': 'letsencrypt',
      });
      expect(specOf(ingress)).toEqual({
        ingressClassName: 'nginx',
        tls: [{ hosts: ['hooks.calls.example.com'], secretName: 'hooks-calls-example-com-tls' }],
        rules: [
          {
            host: 'hooks.calls.example.com',
            http: {
              paths: [
                {
                  path: webhooks.path,
                  pathType: 'Prefix',
                  backend: { service: { name: service.metadata.name, port: { name: 'webhooks' } } },
                },
              ],
            },
          },
        ],
      });
    });

    it('takes the signing secret from the existing Secret, as the variable webhooks.signature.secretEnv names', () => {
      const env = (podSpecOf(deployment).containers[0] as Container).env ?? [];
      expect(env.filter((e) => e.name.startsWith('CALLS_CONNECTOR_WEBHOOK_SECRET'))).toEqual([
        {
          name: 'CALLS_CONNECTOR_WEBHOOK_SECRET_0',
          valueFrom: { secretKeyRef: { name: 'calls-connector-webhooks', key: 'webhook-secret' } },
        },
      ]);
      expect(config['webhooks']).toMatchObject({
        signature: { secretEnv: ['CALLS_CONNECTOR_WEBHOOK_SECRET_0'] },
      });
    });

    it('polls every webhooks.reconcileIntervalMs, the interval the profile sets, with no poll.intervalMs to ignore', () => {
      const parsed = parseConfig(config, {
        CALLS_CONNECTOR_CLIENT_SECRET: 'x',
        CALLS_CONNECTOR_TOKEN_KEY: 'a'.repeat(64),
        CALLS_CONNECTOR_KAFKA_SASL_SECRET: 'x',
        CALLS_CONNECTOR_REGISTRY_USERNAME: 'x',
        CALLS_CONNECTOR_REGISTRY_PASSWORD: 'x',
      });
      expect(livePollIntervalMs(parsed)).toBe(15 * 60_000);
      expect(config['poll']).not.toHaveProperty('intervalMs');
    });
  });

  it('keeps every secret of a rotation active: one variable per key of webhooks.secretKeys', () => {
    const objects = renderChart({ values: single, set: [...withWebhooks, 'webhooks.secretKeys={new,old}'] });
    const env = (podSpecOf(only(objects, 'Deployment')).containers[0] as Container).env ?? [];
    expect(env.filter((e) => e.name.startsWith('CALLS_CONNECTOR_WEBHOOK_SECRET'))).toEqual(
      ['new', 'old'].map((key, i) => ({
        name: `CALLS_CONNECTOR_WEBHOOK_SECRET_${i}`,
        valueFrom: { secretKeyRef: { name: 'calls-webhooks', key } },
      })),
    );
    expect((configDocument(objects)['webhooks'] as { signature: unknown }).signature).toEqual({
      secretEnv: ['CALLS_CONNECTOR_WEBHOOK_SECRET_0', 'CALLS_CONNECTOR_WEBHOOK_SECRET_1'],
    });
  });

  it('renders the Service without an Ingress unless asked, each valid, and admits the webhook port from any peer by default', () => {
    const objects = renderChart({ values: single, set: [...withWebhooks, 'networkPolicy.enabled=true'] });
    expect(objects.filter((o) => o.kind === 'Ingress')).toEqual([]);
    expect(specOf<{ ports: unknown[] }>(only(objects, 'Service', '-webhooks')).ports).toEqual([
      { name: 'webhooks', port: 80, targetPort: 'webhooks', protocol: 'TCP' },
    ]);
    expect(schemaProblems(objects)).toEqual([]);
    const policy = specOf<{ ingress: Array<{ ports: unknown[]; from?: unknown[] }> }>(
      only(objects, 'NetworkPolicy'),
    );
    expect(policy.ingress[1]).toEqual({ ports: [{ port: 'webhooks', protocol: 'TCP' }] });
    expect(lintChart({ values: single, set: [...withWebhooks, 'networkPolicy.enabled=true'] }).status).toBe(
      0,
    );
  });

  it("omits the Ingress's tls section when no certificate Secret is named", () => {
    const objects = renderChart({
      values: single,
      set: [...withWebhooks, 'webhooks.ingress.enabled=true', 'webhooks.ingress.host=hooks.example.com'],
    });
    const ingress = only(objects, 'Ingress');
    expect(specOf(ingress)).not.toHaveProperty('tls');
    expect(specOf(ingress)).not.toHaveProperty('ingressClassName');
    expect(schemaProblems([ingress])).toEqual([]);
  });
});

describe('the Helm chart refuses', () => {
  const base = [profileValues('profiles/single.yaml')];

  it.each([
    [['secrets.clientSecret.name='], /secrets\.clientSecret\.name: name the existing Secret/],
    [['secrets.tokenStoreKey.name='], /secrets\.tokenStoreKey\.name: name the existing Secret/],
    [['tokenStore.type=file'], /tokenStore\.type file needs a volume: set tokenStore\.file\.existingClaim/],
    [
      ['tokenStore.type=file', 'tokenStore.file.existingClaim=pvc', 'mode=distributed'],
      /distributed mode and a standby share a grant and need tokenStore\.type kafka/,
    ],
    [
      ['tokenStore.type=file', 'tokenStore.file.existingClaim=pvc', 'standby=true'],
      /need tokenStore\.type kafka/,
    ],
    [
      ['config.oauth.clientSecret=plain-text'],
      /config\.oauth\.clientSecret is set by the chart: use secrets\.clientSecret/,
    ],
    [['config.schemaRegistry.password=plain'], /config\.schemaRegistry\.password is set by the chart/],
    [['config.metrics.port=9000'], /config\.metrics\.port is set by the chart: use metrics\.port/],
    [['config.poll.shutdownTimeoutMs=1000'], /use shutdownTimeoutSeconds/],
    [['config.auth.staticToken=t'], /config\.auth \(a static token\) is a secret/],
    [
      [
        'config.kafka.sasl.mechanism=plain',
        'config.kafka.sasl.username=u',
        'config.kafka.sasl.password=p',
        'secrets.kafkaSasl.name=k',
      ],
      /config\.kafka\.sasl\.password is a secret: use secrets\.kafkaSasl/,
    ],
    [
      ['config.kafka.sasl.mechanism=plain', 'config.kafka.sasl.username=u'],
      /config\.kafka\.sasl needs secrets\.kafkaSasl\.name/,
    ],
    [
      ['resources.limits.memory=512M'],
      /at '\/resources\/limits\/memory': '512M' does not match pattern '\^\[1-9\]\[0-9\]\*\(Mi\|Gi\)\$'/,
    ],
    [['mode=both'], /at '\/mode': value must be one of 'single', 'distributed'/],
    [['replicaCount=3'], /at '': additional properties 'replicaCount' not allowed/],
    [['nameOverride=Not_A_Name'], /at '\/nameOverride': '.*' does not match pattern/],
    [['tests.enable=false'], /at '\/tests': additional properties 'enable' not allowed/],
    [['webhooks.enabled=true'], /webhooks\.existingSecret: name the existing Secret/],
    [
      ['webhooks.enabled=true', 'webhooks.existingSecret=w', 'webhooks.port=9464'],
      /webhooks\.port equals metrics\.port/,
    ],
    [
      ['webhooks.enabled=true', 'webhooks.existingSecret=w', 'webhooks.ingress.enabled=true'],
      /webhooks\.ingress\.host: the public host name/,
    ],
    [['webhooks.ingress.enabled=true'], /webhooks\.ingress\.enabled needs webhooks\.enabled/],
    [
      ['config.webhooks.enabled=true'],
      /config\.webhooks\.enabled is set by the chart: use webhooks\.enabled/,
    ],
    [['config.webhooks.port=8000'], /config\.webhooks\.port is set by the chart: use webhooks\.port/],
    [
      ['config.webhooks.signature.secretEnv={MINE}'],
      /config\.webhooks\.signature\.secretEnv is set by the chart: use webhooks\.existingSecret/,
    ],
    [['config.webhooks.tls.certFile=/c'], /config\.webhooks\.tls: terminate TLS at the Ingress/],
    [
      ['webhooks.enabled=true', 'webhooks.existingSecret=w', 'webhooks.secretKeys=null'],
      /webhooks\.secretKeys: name the key/,
    ],
    [
      ['webhooks.enabled=true', 'webhooks.existingSecret=w', 'webhooks.secretKeys={}'],
      /at '\/webhooks\/secretKeys\/0': minLength: got 0, want 1/,
    ],
  ])('%j, saying what to do', (set, message) => {
    expect(renderRefusal({ values: base, set })).toMatch(message);
  });
});

describe('the Helm chart as a subchart', () => {
  const base = [profileValues('profiles/single.yaml')];

  it("accepts a parent chart's globals, and renders nothing at all with enabled: false", () => {
    const withGlobals = renderChart({ values: base, set: ['global.anything=1', 'global.storageClass=fast'] });
    expect(schemaProblems(withGlobals)).toEqual([]);
    const off = helm(templateArgs({ values: base, set: ['enabled=false'] }));
    expect(off.status, off.stderr).toBe(0);
    expect(off.stdout.trim()).toBe('');
    // Not even the refusals: a disabled dependency needs none of its required values.
    expect(renderChart({ set: ['enabled=false'] })).toEqual([]);
  });

  it('names every object after fullnameOverride or nameOverride, and selects its pods by that name', () => {
    const full = renderChart({ values: base, set: ['fullnameOverride=calls'] });
    expect(new Set(full.map((o) => o.metadata.name.replace(/-(metrics|test|dashboard)$/, '')))).toEqual(
      new Set(['calls']),
    );
    const named = renderChart({ values: base, release: 'prod', set: ['nameOverride=calls'] });
    const deployment = only(named, 'Deployment');
    expect(deployment.metadata.name).toBe('prod-calls');
    expect(podLabelsOf(deployment)['app.kubernetes.io/name']).toBe('calls');
    expect(schemaProblems(named)).toEqual([]);
  });

  it('puts commonLabels on every object and pod, and podLabels and podAnnotations on the pods', () => {
    const objects = renderChart({
      values: base,
      set: ['commonLabels.team=data', 'podLabels.tier=ingest', 'podAnnotations.example\\.com/owner=data'],
    });
    for (const object of objects)
      expect(object.metadata.labels, object.metadata.name).toMatchObject({ team: 'data' });
    const deployment = only(objects, 'Deployment');
    expect(podLabelsOf(deployment)).toMatchObject({ team: 'data', tier: 'ingest' });
    const annotations = (
      deployment['spec'] as { template: { metadata: { annotations: Record<string, string> } } }
    ).template.metadata.annotations;
    expect(annotations['example.com/owner']).toBe('data');
    expect(Object.keys(annotations)).toContain('checksum/config');
  });

  it('pulls from image.registry, and from global.imageRegistry over it', () => {
    const image = (set: string[]) =>
      (podSpecOf(only(renderChart({ values: base, set }), 'Deployment')).containers[0] as { image: string })
        .image;
    expect(image([])).toBe('registry.example.com/calls-connector:0.1.0');
    expect(image(['image.registry=mirror.example.com'])).toBe(
      'mirror.example.com/registry.example.com/calls-connector:0.1.0',
    );
    expect(image(['image.repository=calls-connector', 'image.registry=mirror.example.com'])).toBe(
      'mirror.example.com/calls-connector:0.1.0',
    );
    expect(
      image([
        'image.repository=calls-connector',
        'image.registry=mirror.example.com',
        'global.imageRegistry=global.example.com',
      ]),
    ).toBe('global.example.com/calls-connector:0.1.0');
  });

  it('adds the extra environment, volumes, init containers, sidecars, scheduling keys and security contexts', () => {
    const values = join(mkdtempSync(join(tmpdir(), 'calls-helm-extra-')), 'values.yaml');
    writeFileSync(
      values,
      stringify({
        extraEnv: [{ name: 'TZ', value: 'UTC' }],
        extraEnvFrom: [{ configMapRef: { name: 'proxy' } }],
        extraVolumes: [{ name: 'ca', configMap: { name: 'proxy-ca' } }],
        extraVolumeMounts: [{ name: 'ca', mountPath: '/etc/ca', readOnly: true }],
        initContainers: [{ name: 'wait', image: 'busybox:1.36', command: ['true'] }],
        sidecars: [{ name: 'shipper', image: 'shipper:1', args: ['{{ .Release.Name }}'] }],
        nodeSelector: { 'kubernetes.io/os': 'linux' },
        tolerations: [{ key: 'dedicated', operator: 'Exists', effect: 'NoSchedule' }],
        affinity: { nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [] } },
        topologySpreadConstraints: [
          { maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'ScheduleAnyway' },
        ],
        priorityClassName: 'high',
        podSecurityContext: { runAsNonRoot: true, runAsUser: 2000, fsGroup: 2000 },
        securityContext: { runAsNonRoot: true, readOnlyRootFilesystem: true },
      }),
    );
    const objects = renderChart({ values: [...base, values], release: 'prod' });
    expect(schemaProblems(objects)).toEqual([]);
    const pod = podSpecOf(only(objects, 'Deployment')) as PodSpec & Record<string, unknown>;
    const [connector, sidecar] = pod.containers as Array<Container & Record<string, unknown>>;
    expect(connector?.env?.at(-1)).toEqual({ name: 'TZ', value: 'UTC' });
    expect(connector?.['envFrom']).toEqual([{ configMapRef: { name: 'proxy' } }]);
    expect(connector?.volumeMounts?.at(-1)).toEqual({ name: 'ca', mountPath: '/etc/ca', readOnly: true });
    expect(pod.volumes?.at(-1)).toEqual({ name: 'ca', configMap: { name: 'proxy-ca' } });
    expect(pod.initContainers?.map((c) => c.name)).toEqual(['wait']);
    expect(sidecar).toMatchObject({ name: 'shipper', args: ['prod'] });
    expect(pod['nodeSelector']).toEqual({ 'kubernetes.io/os': 'linux' });
    expect(pod['tolerations']).toHaveLength(1);
    expect(pod['affinity']).toHaveProperty('nodeAffinity');
    expect(pod['topologySpreadConstraints']).toHaveLength(1);
    expect(pod['priorityClassName']).toBe('high');
    // Helm merges a map of values over its default: the keys given replace theirs, a null drops one.
    expect(pod.securityContext).toEqual({
      runAsNonRoot: true,
      runAsUser: 2000,
      runAsGroup: 1000,
      fsGroup: 2000,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(connector?.securityContext).toMatchObject({ runAsUser: 1000, readOnlyRootFilesystem: true });
    const dropped = renderChart({ values: base, set: ['securityContext.seccompProfile=null'] });
    expect(
      (podSpecOf(only(dropped, 'Deployment')).containers[0] as Container).securityContext,
    ).not.toHaveProperty('seccompProfile');
  });

  it('scrapes through a ServiceMonitor and the headless metrics Service, as job="calls-connector"', () => {
    const objects = renderChart({
      values: base,
      set: ['serviceMonitor.enabled=true', 'tests.enabled=false'],
    });
    expect(schemaProblems(objects)).toEqual([]);
    const monitor = specOf<{ selector: { matchLabels: Record<string, string> }; endpoints: unknown[] }>(
      only(objects, 'ServiceMonitor'),
    );
    const service = only(objects, 'Service', '-metrics');
    expect(service.metadata.labels).toMatchObject(monitor.selector.matchLabels);
    expect(monitor.endpoints).toEqual([
      expect.objectContaining({
        port: 'metrics',
        path: '/metrics',
        relabelings: [{ action: 'replace', targetLabel: 'job', replacement: 'calls-connector' }],
      }),
    ]);
    // Without the ServiceMonitor and the helm test, no metrics Service.
    expect(
      renderChart({ values: base, set: ['tests.enabled=false'] }).filter((o) => o.kind === 'Service'),
    ).toEqual([]);
  });

  it('closes the metrics port to every peer but the helm test pod while networkPolicy.metricsFrom is empty', () => {
    const objects = renderChart({ values: base, set: ['networkPolicy.enabled=true'] });
    const policy = specOf<{ ingress: Array<{ ports: unknown[]; from?: unknown[] }> }>(
      only(objects, 'NetworkPolicy'),
    );
    expect(policy.ingress).toEqual([
      {
        ports: [{ port: 'metrics', protocol: 'TCP' }],
        from: [{ podSelector: { matchLabels: HELM_TEST_POD } }],
      },
    ]);
    const test = only(objects, 'Pod', '-test');
    expect(test.metadata.labels).toMatchObject(HELM_TEST_POD);
  });
});

describe('the helm test hook', () => {
  const objects = renderChart({ values: [profileValues('profiles/distributed.yaml')] });
  const pod = only(objects, 'Pod', '-test');
  const container = podSpecOf(pod).containers[0] as Container & { image: string };

  it("runs the connector's image with files/helm-test.mjs against the headless metrics Service, as a test hook", () => {
    expect(pod.metadata.annotations).toMatchObject({ 'helm.sh/hook': 'test' });
    const configMap = only(objects, 'ConfigMap', '-test');
    expect(configMap.metadata.annotations).toMatchObject({ 'helm.sh/hook': 'test' });
    expect((configMap['data'] as Record<string, string>)['helm-test.mjs']).toBe(
      readFileSync(join(CHART, 'files/helm-test.mjs'), 'utf8'),
    );
    expect(container.image).toBe((podSpecOf(only(objects, 'Deployment')).containers[0] as Container).image);
    expect(container.command).toEqual(['node', '/etc/calls-connector-test/helm-test.mjs']);
    expect(container.args).toEqual([
      '/etc/calls-connector/config.yaml',
      'calls-connector-metrics',
      '9464',
      'distributed',
    ]);
    // The connector's own configuration and secrets, to reach the calls topic as the connector does.
    const connector = podSpecOf(only(objects, 'Deployment')).containers[0] as Container;
    expect(container.env).toEqual(connector.env);
    expect(container.volumeMounts?.map((m) => m.mountPath)).toEqual([
      ...(connector.volumeMounts ?? []).map((m) => m.mountPath),
      '/etc/calls-connector-test',
    ]);
  });
});

describe('the chart package', () => {
  const chart = parseYaml(readFileSync(join(CHART, 'Chart.yaml'), 'utf8')) as {
    version: string;
    kubeVersion: string;
    icon: string;
    maintainers: Array<{ name: string }>;
    annotations: Record<string, string>;
  };

  it('carries the metadata chart-testing and Artifact Hub read: maintainers, kubeVersion, icon, annotations', () => {
    expect(chart.maintainers.length).toBeGreaterThan(0);
    expect(chart.kubeVersion).toBe('>=1.27.0-0');
    expect(chart.icon).toMatch(/^https:\/\/.+\.svg$/);
    expect(existsSync(join(CHART, 'icon.svg'))).toBe(true);
    expect(chart.annotations['artifacthub.io/license']).toBe(
      (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { license: string }).license,
    );
    const list = (key: string) => parseYaml(chart.annotations[key] ?? '') as Array<Record<string, string>>;
    expect(list('artifacthub.io/links').map((l) => l['name'])).toEqual(['Documentation', 'Source']);
    expect(list('artifacthub.io/images')).toEqual([
      { name: 'calls-connector', image: 'calls-connector:0.1.0' },
    ]);
    for (const change of list('artifacthub.io/changes'))
      expect(['added', 'changed', 'deprecated', 'removed', 'fixed', 'security']).toContain(change['kind']);
  });

  it('gives chart-testing the profiles as its ci/ values: one link per profile, no copy', () => {
    const profiles = readdirSync(join(CHART, 'profiles')).sort();
    const ci = readdirSync(join(CHART, 'ci')).sort();
    expect(ci).toEqual(profiles.map((file) => file.replace(/\.yaml$/, '-values.yaml')));
    for (const file of ci)
      expect(readlinkSync(join(CHART, 'ci', file))).toBe(`../profiles/${file.replace('-values', '')}`);
    const ct = parseYaml(readFileSync(join(CHART, '../ct.yaml'), 'utf8')) as Record<string, unknown>;
    expect(ct['chart-dirs']).toEqual(['deploy/helm']);
    expect(ct['check-version-increment']).toBe(true);
  });
});

describe('strict validation as an API server does it (kubeconform -strict, vendored schemas)', () => {
  it('passes every values example of the chart README', () => {
    const readme = readFileSync(join(CHART, 'README.md'), 'utf8');
    const examples = [...readme.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');
    expect(examples.length).toBeGreaterThanOrEqual(2);
    for (const [i, example] of examples.entries()) {
      const parsed = parseYaml(example) as Record<string, unknown>;
      // A subchart example holds the chart's values under its name, beside the parent's globals.
      const values =
        'calls-connector' in parsed
          ? { global: parsed['global'], ...(parsed['calls-connector'] as object) }
          : parsed;
      const file = join(mkdtempSync(join(tmpdir(), 'calls-helm-example-')), `example-${i}.yaml`);
      writeFileSync(file, stringify(values));
      const objects = renderChart({ values: [file] });
      expect(objects.length, `example ${i}`).toBeGreaterThan(5);
      expect(schemaProblems(objects), `example ${i}`).toEqual([]);
    }
  });

  it('refuses an object with a misspelt field, as an API server does (the chart renders what values say)', () => {
    const objects = renderChart({
      values: [profileValues('profiles/single.yaml')],
      set: ['securityContext.readOnlyRootFilesytem=true', 'tests.enabled=false'],
    });
    expect(schemaProblems(objects)).toEqual([
      expect.stringMatching(
        /^Deployment\/calls-connector: statusInvalid: .*at '\/spec\/template\/spec\/containers\/0\/securityContext': additional properties 'readOnlyRootFilesytem' not allowed/,
      ),
    ]);
    // And a kind with no vendored schema is an error, never waved through.
    expect(
      schemaProblems([{ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'not-vendored' } }]),
    ).toEqual([
      expect.stringMatching(/^Secret\/not-vendored: statusError: could not find schema for Secret/),
    ]);
  });
});
