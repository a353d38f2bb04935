/**
 * The Helm chart (deploy/helm/calls-connector, docs/kubernetes.md) rendered by a real `helm` for every documented
 * values profile: linted, every object validated against the Kubernetes and Prometheus Operator schemas, the pod's
 * hardening checked object by object, the configuration accepted by the connector's own validation, the
 * monitoring objects the ones config/ holds; and the values the chart must refuse, refused with a message that
 * says what to do. No cluster: what a cluster would add (scheduling, probes run by a kubelet) is not claimed.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify } from 'yaml';
import { parseConfig } from '../../../src/config/load.js';
import {
  CHART,
  REPO_ROOT,
  lintChart,
  only,
  renderChart,
  renderRefusal,
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
  /** Kinds the profile renders beyond the ConfigMap, ServiceAccount, Deployment and PodDisruptionBudget. */
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
    extraKinds: ['ConfigMap', 'NetworkPolicy', 'PodMonitor', 'PrometheusRule'],
  },
  { file: 'profiles/file-store.yaml', mode: 'single', replicas: 1, tokenStore: 'file', extraKinds: ['Job'] },
];

const profileValues = (file: string) => `deploy/helm/calls-connector/${file}`;

const podSpecOf = (object: K8sObject): PodSpec =>
  (object['spec'] as { template: { spec: PodSpec } }).template.spec;
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
      ['ConfigMap', 'Deployment', 'PodDisruptionBudget', 'ServiceAccount', ...profile.extraKinds].sort(),
    );
    expect(objects.flatMap(schemaProblems)).toEqual([]);
  });

  it('renders no Secret and no Service: secrets are referenced, the metrics port is exposed by nothing', () => {
    expect(objects.filter((o) => o.kind === 'Secret' || o.kind === 'Service')).toEqual([]);
  });

  it('runs every pod hardened: non-root, read-only root, no capabilities, RuntimeDefault seccomp, heap from the memory limit', () => {
    const pods = objects.filter((o) => o.kind === 'Deployment' || o.kind === 'Job');
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
    const env = Object.fromEntries(
      secretVariables.map((e) => [e.name, e.name.endsWith('TOKEN_KEY') ? 'a'.repeat(64) : 'from-a-secret']),
    );
    const config = parseConfig(document, env);
    expect(config.connector.mode).toBe(profile.mode);
    expect(config.oauth?.store.type).toBe(profile.tokenStore);
    expect(config.metrics).toMatchObject({ enabled: true, host: '0.0.0.0' });
    // Every ${NAME} the config names is a variable the container sets from a Secret, and nothing else is.
    const referenced = [...JSON.stringify(document).matchAll(/\$\{([A-Z0-9_]+)\}/g)].map((m) => m[1]);
    expect(new Set(referenced)).toEqual(
      new Set(secretVariables.map((e) => e.name).filter((name) => name !== 'CALLS_CONNECTOR_TOKEN_KEY')),
    );
    expect(config.oauth?.keyEnv).toBe('CALLS_CONNECTOR_TOKEN_KEY');
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
    // A standby is never ready: with none unavailable allowed, no old pod could ever go.
    const maxUnavailable = profile.file.includes('standby') ? 1 : 0;
    expect(spec.strategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable } });
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
    expect(spec.ingress).toHaveLength(1);
    expect(spec.ingress[0]?.ports).toEqual([{ port: 'metrics', protocol: 'TCP' }]);
    expect(spec.ingress[0]?.from).toEqual([
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } },
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
    expect(only(objects, 'Deployment')).toBeDefined();
    expect((container as { image?: string }).image).toBe(`calls-connector:${pkg.version}`);
    expect(container.env?.find((e) => e.name === 'NODE_OPTIONS')?.value).toBe(
      `--max-old-space-size=${dockerfileFacts().heapMiB}`,
    );
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
    [['resources.limits.memory=512M'], /memory/],
    [['mode=both'], /mode/],
    [['replicaCount=3'], /replicaCount/],
  ])('%j, saying what to do', (set, message) => {
    expect(renderRefusal({ values: base, set })).toMatch(message);
  });
});
