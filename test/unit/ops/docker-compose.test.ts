/**
 * docker-compose.yml cannot be run here (no Docker engine), so this test holds it to the configuration
 * the rest of the suite tests: the connector config it mounts must validate, and every host, port,
 * path, topic and version it shares with that config, the sandbox, Prometheus and Grafana must agree.
 */
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parseConfig } from '../../../src/config/load.js';
import { kafkaSchema } from '../../../src/config/schema.js';
import { DEFAULT_CLIENT } from '../../../packages/sandbox/src/index.js';
import { generateData } from '../../../packages/sandbox/src/data/generator.js';

const root = new URL('../../../', import.meta.url);
const read = (path: string): string => readFileSync(new URL(path, root), 'utf8');

interface Service {
  image?: string;
  build?: { context: string; dockerfile: string };
  hostname?: string;
  command?: string[];
  environment?: Record<string, string | number>;
  volumes?: string[];
  ports?: string[];
  depends_on?: Record<string, { condition: string; restart?: boolean }> | string[];
  healthcheck?: { test: string[] };
  stop_grace_period?: string;
  profiles?: string[];
}
interface Compose {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
}

const compose = parse(read('docker-compose.yml'), { merge: true }) as Compose;
const service = (name: string): Service => {
  const found = compose.services[name];
  if (found === undefined) throw new Error(`docker-compose.yml has no service ${name}`);
  return found;
};
const connector = service('connector');
const sandbox = service('sandbox');
const kafka = service('kafka');

/** Compose's own interpolation of a value: `${X:-default}` gives the default, `${X:?msg}` a test value. */
function composeValue(value: string | number): string {
  return String(value).replace(
    /\$\{([A-Z0-9_]+)(?::([-?])([^}]*))?\}/g,
    (_m, name: string, kind?: string, rest?: string) =>
      kind === '-' ? (rest ?? '') : `test-value-of-${name}`,
  );
}
const connectorEnv: Record<string, string> = Object.fromEntries(
  Object.entries(connector.environment ?? {}).map(([k, v]) => [k, composeValue(v)]),
);

/** `--flag value` of a command line. */
function flag(command: string[] | undefined, name: string): string | undefined {
  const args = command ?? [];
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
}

/** Bind mounts and volumes of a service as {source, target, readOnly}. */
function mounts(s: Service): { source: string; target: string; readOnly: boolean }[] {
  return (s.volumes ?? []).map((v) => {
    const [source = '', target = '', mode] = v.split(':');
    return { source, target, readOnly: mode === 'ro' };
  });
}

/** The mount of `s` holding container path `path`. */
function mountHolding(s: Service, path: string) {
  return mounts(s).find((m) => path === m.target || path.startsWith(`${m.target}/`));
}

const dockerConfig = parseConfig(parse(read('config/docker/connector.yaml')), connectorEnv);

describe('docker-compose.yml', () => {
  it('pins every image to a version tag, and every pulled image but Kafka (digest unknown here) by digest', () => {
    for (const [name, s] of Object.entries(compose.services)) {
      expect(s.image, name).toMatch(/^[\w./-]+:v?\d+(\.\d+)+[\w.-]*(@sha256:[0-9a-f]{64})?$/);
      const pulled = !(s.image ?? '').startsWith('calls-connector:');
      if (pulled && name !== 'kafka') expect(s.image, name).toMatch(/@sha256:[0-9a-f]{64}$/);
    }
  });

  it('builds the connector image once, from the Dockerfile, tagged with the package version, and runs it for the sandbox too', () => {
    const { version } = JSON.parse(read('package.json')) as { version: string };
    for (const s of [connector, sandbox, service('authorize')])
      expect(s.image).toBe(`calls-connector:${version}`);
    expect(connector.build).toEqual({ context: '.', dockerfile: 'Dockerfile' });
    const builders = Object.entries(compose.services).filter(([, s]) => s.build !== undefined);
    expect(builders.map(([name]) => name)).toEqual(['connector']);
    expect(existsSync(new URL('Dockerfile', root))).toBe(true);
  });

  it('publishes every port on 127.0.0.1 only', () => {
    for (const [name, s] of Object.entries(compose.services))
      for (const port of s.ports ?? []) expect(port, name).toMatch(/^127\.0\.0\.1:\d+:\d+$/);
  });

  it('asks for the sandbox admin key and the Grafana password, with no default', () => {
    expect(String(sandbox.environment?.SANDBOX_ADMIN_KEY)).toMatch(/^\$\{SANDBOX_ADMIN_KEY:\?.+\}$/);
    expect(String(service('grafana').environment?.GF_SECURITY_ADMIN_PASSWORD)).toMatch(
      /^\$\{GRAFANA_ADMIN_PASSWORD:\?.+\}$/,
    );
  });

  it('keeps Kafka data on a volume and checks the registry through its API', () => {
    const dataDir = String(kafka.environment?.KAFKA_LOG_DIRS);
    expect(mountHolding(kafka, dataDir)?.source).toBe('kafka-data');
    expect(service('registry').healthcheck?.test.join(' ')).toContain('/apis/ccompat/v7/subjects');
  });

  it('authorizes again and restarts the connector when the sandbox (data and grants in memory) restarts', () => {
    expect(service('authorize').depends_on).toMatchObject({ sandbox: { restart: true } });
    expect(connector.depends_on).toMatchObject({ sandbox: { restart: true }, authorize: { restart: true } });
  });

  it('mounts only files and folders that exist in the repository', () => {
    for (const [name, s] of Object.entries(compose.services)) {
      for (const { source } of mounts(s).filter((m) => m.source.startsWith('./'))) {
        expect(existsSync(new URL(source, root)), `${name}: ${source}`).toBe(true);
      }
      for (const { source } of mounts(s).filter(
        (m) => !m.source.startsWith('./') && !m.source.startsWith('/'),
      )) {
        expect(Object.keys(compose.volumes ?? {}), `${name}: volume ${source}`).toContain(source);
      }
    }
  });

  it('runs the connector with config/docker/connector.yaml at the path the image runs by default', () => {
    const dockerfileCmd = /^CMD (\[.*\])$/m.exec(read('Dockerfile'))?.[1];
    const cmd = JSON.parse(dockerfileCmd ?? '[]') as string[];
    expect(connector.command).toEqual(cmd);
    const configPath = flag(cmd, '--config');
    expect(mounts(connector)).toContainEqual({
      source: './config/docker/connector.yaml',
      target: configPath,
      readOnly: true,
    });
  });

  it('mounts a connector config that passes validation with the environment compose gives it', () => {
    expect(dockerConfig.connector.name).toBe('calls-connector-compose');
    expect(dockerConfig.oauth?.clientSecret).toBe(DEFAULT_CLIENT.clientSecret);
  });

  it('uses the default topic names, so documented consumer commands work against compose', () => {
    const defaults = kafkaSchema.parse({ brokers: ['x:1'] });
    expect([dockerConfig.kafka.topic, dockerConfig.kafka.offsetsTopic, dockerConfig.kafka.dlqTopic]).toEqual([
      defaults.topic,
      defaults.offsetsTopic,
      defaults.dlqTopic,
    ]);
  });

  it('points the connector at the compose Kafka listener, configured for transactions on one node', () => {
    const env = kafka.environment ?? {};
    const advertised = String(env.KAFKA_ADVERTISED_LISTENERS).split(',');
    for (const broker of dockerConfig.kafka.brokers) expect(advertised).toContain(`PLAINTEXT://${broker}`);
    expect(String(env.KAFKA_PROCESS_ROLES)).toBe('broker,controller');
    expect(Number(env.KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR)).toBe(1);
    expect(Number(env.KAFKA_TRANSACTION_STATE_LOG_MIN_ISR)).toBe(1);
    expect(Number(env.KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR)).toBe(1);
    expect(dockerConfig.kafka.replicationFactor).toBe(1);
    expect(dockerConfig.kafka.exactlyOnce).toBe(true);
    expect(connector.depends_on).toMatchObject({ kafka: { condition: 'service_healthy' } });
  });

  it('runs the Kafka version the integration tests run against', () => {
    const tested = /STACK_KAFKA_VERSION \?\? '([\d.]+)'/.exec(read('scripts/stack.mjs'))?.[1];
    expect(tested).toBeDefined();
    expect(kafka.image?.split('@')[0]).toBe(`apache/kafka:${tested}`);
    // The Docker path of the tests (testcontainers) runs that release too.
    expect(
      /export const KAFKA_VERSION = '([\d.]+)'/.exec(read('tools/devstack/stack-provider.ts'))?.[1],
    ).toBe(tested);
  });

  it('points the connector at the compose registry with the tested Apicurio version', () => {
    const url = new URL(dockerConfig.schemaRegistry.url);
    expect(url.hostname).toBe('registry');
    expect(url.pathname).toBe('/apis/ccompat/v7');
    const registry = service('registry');
    expect(registry.ports?.map((p) => p.split(':').at(-1))).toContain(url.port);
    const tested = /'(apicurio\/apicurio-registry:[\d.]+)'/.exec(
      read('tools/devstack/stack-provider.ts'),
    )?.[1];
    expect(registry.image?.split('@')[0]).toBe(tested);
  });

  it('serves the sandbox under the host name and port the connector calls, with a certificate it trusts', () => {
    const api = new URL(dockerConfig.api.baseUrl);
    expect(api.protocol).toBe('https:');
    expect(flag(sandbox.command, '--host')).toBe(api.hostname);
    expect(sandbox.hostname).toBe(api.hostname);
    expect(flag(sandbox.command, '--port')).toBe(api.port);
    expect(sandbox.command?.[0]).toBe('sandbox');

    const caFile = dockerConfig.api.caFile ?? '';
    expect(flag(sandbox.command, '--cert-out')).toBe(caFile);
    const written = mountHolding(sandbox, caFile);
    const trusted = mountHolding(connector, caFile);
    expect(written?.source).toBeDefined();
    expect(trusted?.source).toBe(written?.source);
    expect(connector.depends_on).toMatchObject({ sandbox: { condition: 'service_healthy' } });
  });

  it('syncs exactly the locations the sandbox generates from its seed', () => {
    const seed = Number(flag(sandbox.command, '--seed'));
    const locations = Number(flag(sandbox.command, '--locations'));
    const callsPerLocation = Number(flag(sandbox.command, '--calls'));
    const generated = generateData({ seed, locations, callsPerLocation }).locations;
    // The uids depend on the sandbox's data generator: when it changes, paste these into the config.
    expect(
      dockerConfig.sources.flatMap((s) => s.locations),
      `config/docker/connector.yaml sources[0].locations must be ${JSON.stringify(generated)}`,
    ).toEqual(generated);
  });

  it('authorizes as the sandbox client with its registered redirect URI', () => {
    expect(sandbox.command).toContain('--auto-approve');
    expect(dockerConfig.oauth?.clientId).toBe(DEFAULT_CLIENT.clientId);
    expect(dockerConfig.oauth?.redirectUri).toBe(DEFAULT_CLIENT.redirectUri);
  });

  it('authorizes once through the real OAuth flow before the connector starts, into the store the connector reads', () => {
    const authorize = service('authorize');
    expect(connector.depends_on).toMatchObject({
      authorize: { condition: 'service_completed_successfully' },
    });
    expect(authorize.depends_on).toMatchObject({ sandbox: { condition: 'service_healthy' } });
    const script = (authorize as Service & { entrypoint?: string[] }).entrypoint?.[1] ?? '';
    expect(mounts(authorize)).toContainEqual({
      source: `./${script}`,
      target: `/app/${script}`,
      readOnly: true,
    });
    const configPath = authorize.command?.[0] ?? '';
    expect(mounts(authorize)).toContainEqual({
      source: './config/docker/connector.yaml',
      target: configPath,
      readOnly: true,
    });
    const store = dockerConfig.oauth?.store;
    const path = store?.type === 'file' ? store.path : '';
    expect(mountHolding(authorize, path)).toEqual(mountHolding(connector, path));
    expect(Object.keys(authorize.environment ?? {})).toContain(dockerConfig.oauth?.keyEnv);
    expect(authorize.environment?.NODE_EXTRA_CA_CERTS).toBe(dockerConfig.api.caFile);
    expect(mountHolding(authorize, dockerConfig.api.caFile ?? '')?.source).toBe(
      mountHolding(sandbox, dockerConfig.api.caFile ?? '')?.source,
    );
  });

  it('keeps the token store on a volume and hands the connector its encryption key', () => {
    const store = dockerConfig.oauth?.store;
    expect(store?.type).toBe('file');
    const path = store?.type === 'file' ? store.path : '';
    const mount = mountHolding(connector, path);
    expect(mount?.readOnly).toBe(false);
    expect(Object.keys(compose.volumes ?? {})).toContain(mount?.source);
    expect(Object.keys(connector.environment ?? {})).toContain(dockerConfig.oauth?.keyEnv);
  });

  it('gives the connector longer to stop than its graceful shutdown takes, so docker never kills it mid-commit', () => {
    const grace = /^(\d+)s$/.exec(connector.stop_grace_period ?? '');
    expect(grace, 'stop_grace_period in seconds').not.toBeNull();
    // The shutdown timeout bounds the pages in flight; closing Kafka, OAuth and HTTP comes after it.
    expect(Number(grace![1]) * 1000).toBeGreaterThanOrEqual(dockerConfig.poll.shutdownTimeoutMs + 10_000);
  });

  it('runs a distributed-mode service that `--scale` can multiply: no host port, its own name and topics, a shared token store', () => {
    const distributed = service('connector-distributed');
    const authorize = service('authorize-distributed');
    const configPath = flag(distributed.command, '--config') ?? '';
    const mount = mountHolding(distributed, configPath);
    expect(mount).toEqual({
      source: './config/docker/connector-distributed.yaml',
      target: configPath,
      readOnly: true,
    });
    const config = parseConfig(parse(read('config/docker/connector-distributed.yaml')), connectorEnv);
    expect(config.connector.mode).toBe('distributed');
    // Replicas would clash on a published port; a second connector name keeps the two services apart.
    expect(distributed.ports ?? []).toEqual([]);
    expect(config.connector.name).not.toBe(dockerConfig.connector.name);
    for (const topic of ['topic', 'offsetsTopic', 'dlqTopic'] as const)
      expect(config.kafka[topic], topic).not.toBe(dockerConfig.kafka[topic]);
    expect(config.sources).toEqual(dockerConfig.sources);
    // Every replica reads the grant (and every rotated refresh token) from Kafka, stored there by authorize.
    expect(config.oauth?.store.type).toBe('kafka');
    expect(mountHolding(authorize, configPath)?.source).toBe(mount?.source);
    expect(distributed.depends_on).toMatchObject({
      'authorize-distributed': { condition: 'service_completed_successfully' },
      kafka: { condition: 'service_healthy' },
    });
    expect(distributed.profiles).toEqual(['distributed']);
    expect(authorize.profiles).toEqual(['distributed']);
    expect(distributed.image).toBe(connector.image);
    expect(Number(/(\d+)s$/.exec(distributed.stop_grace_period ?? '')?.[1]) * 1000).toBeGreaterThanOrEqual(
      config.poll.shutdownTimeoutMs + 10_000,
    );
    const prometheusConfig = parse(read('config/prometheus/prometheus.yml')) as {
      scrape_configs: { job_name: string; dns_sd_configs?: { names: string[]; port: number }[] }[];
    };
    const job = prometheusConfig.scrape_configs.find((c) => c.job_name === 'calls-connector');
    expect(job?.dns_sd_configs).toContainEqual(
      expect.objectContaining({ names: ['connector-distributed'], port: config.metrics.port }),
    );
  });

  it('has Prometheus scrape the connector service on its configured metrics port', () => {
    const prometheusConfig = parse(read('config/prometheus/prometheus.yml')) as {
      scrape_configs: { job_name: string; metrics_path?: string; static_configs: { targets: string[] }[] }[];
    };
    const job = prometheusConfig.scrape_configs.find((c) => c.job_name === 'calls-connector');
    expect(job?.metrics_path ?? '/metrics').toBe('/metrics');
    expect(job?.static_configs.flatMap((c) => c.targets)).toEqual([`connector:${dockerConfig.metrics.port}`]);
    expect(dockerConfig.metrics.enabled).toBe(true);
    expect(dockerConfig.metrics.host).toBe('0.0.0.0');
    expect(connector.ports).toContain(`127.0.0.1:${dockerConfig.metrics.port}:${dockerConfig.metrics.port}`);
    expect(new URL(connectorEnv.CALLS_CONNECTOR_HEALTH_URL ?? '').port).toBe(
      String(dockerConfig.metrics.port),
    );
  });

  it('has the alert rules the connector scrape job name is written for', () => {
    expect(read('config/prometheus/alerts.yml')).toContain('up{job="calls-connector"}');
  });

  it('gives Prometheus its configuration and the alert rules it loads', () => {
    const prometheus = service('prometheus');
    const configFile =
      (prometheus.command ?? []).find((a) => a.startsWith('--config.file='))?.split('=')[1] ?? '';
    const mount = mountHolding(prometheus, configFile);
    expect(mount?.source).toBe('./config/prometheus');
    const prometheusConfig = parse(read('config/prometheus/prometheus.yml')) as { rule_files: string[] };
    for (const rules of prometheusConfig.rule_files) {
      expect(existsSync(new URL(`config/prometheus/${rules}`, root)), rules).toBe(true);
    }
  });

  it('gives Grafana its provisioning and the dashboard at the path the provider loads', () => {
    const grafana = service('grafana');
    const provider = parse(read('config/grafana/provisioning/dashboards/calls-connector.yml')) as {
      providers: { options: { path: string } }[];
    };
    const dashboardDir = provider.providers[0]?.options.path ?? '';
    expect(mounts(grafana)).toContainEqual({
      source: './config/grafana/calls-connector.json',
      target: `${dashboardDir}/calls-connector.json`,
      readOnly: true,
    });
    expect(mounts(grafana)).toContainEqual({
      source: './config/grafana/provisioning',
      target: '/etc/grafana/provisioning',
      readOnly: true,
    });
  });
});
