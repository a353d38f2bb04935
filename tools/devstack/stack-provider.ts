/**
 * Where a development Kafka broker and schema registry come from, for the test suite and `calls-connector demo`.
 *
 * Sources, tried in the caller's order:
 * - `environment`: KAFKA_BROKERS (comma-separated host:port) + SCHEMA_REGISTRY_URL;
 * - `docker`: a reachable Docker engine → testcontainers (Kafka in KRaft mode + Apicurio Registry images);
 * - `jvm`: Java 17+ and Maven → scripts/stack.mjs (Kafka and Apicurio Registry from Maven Central, no Docker).
 * When none is available the error names what to install. Never a fake broker or registry.
 *
 * Production deployments never use this module: they name their brokers and registry in the config file.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { FatalError } from '../../src/errors/index.js';
import { packageRoot } from '../../src/package-info.js';

export type StackSource = 'environment' | 'docker' | 'jvm';

export interface DevStack {
  brokers: string[];
  registryUrl: string;
  /** Human-readable description of where the stack came from. */
  description: string;
  /** Stops what this provider started (containers); a JVM stack is left running for warm reuse. */
  stop(): Promise<void>;
}

function fromEnvironment(env: NodeJS.ProcessEnv): DevStack | null {
  const brokers = env.KAFKA_BROKERS;
  const registryUrl = env.SCHEMA_REGISTRY_URL;
  if (!brokers || !registryUrl) return null;
  return {
    brokers: brokers.split(',').map((b) => b.trim()),
    registryUrl,
    description: 'environment (KAFKA_BROKERS, SCHEMA_REGISTRY_URL)',
    stop: async () => {},
  };
}

function dockerReachable(): boolean {
  const probe = spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], {
    encoding: 'utf8',
    timeout: 10_000,
  });
  return probe.status === 0 && probe.stdout.trim().length > 0;
}

async function fromDocker(): Promise<DevStack | null> {
  if (!dockerReachable()) return null;
  let testcontainers: typeof import('testcontainers');
  let kafkaModule: typeof import('@testcontainers/kafka');
  try {
    testcontainers = await import('testcontainers');
    kafkaModule = await import('@testcontainers/kafka');
  } catch {
    return null; // a production install has no dev dependencies
  }
  const { GenericContainer, Wait } = testcontainers;
  const [kafka, registry] = await Promise.all([
    new kafkaModule.KafkaContainer('confluentinc/cp-kafka:7.9.0')
      .withKraft()
      .withEnvironment({
        KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1',
        KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
        KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
        KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
        KAFKA_AUTO_CREATE_TOPICS_ENABLE: 'false',
      })
      .start(),
    new GenericContainer('apicurio/apicurio-registry:3.3.3')
      .withExposedPorts(8080)
      .withWaitStrategy(Wait.forHttp('/apis/ccompat/v7/subjects', 8080))
      .start(),
  ]);
  return {
    brokers: [`${kafka.getHost()}:${kafka.getMappedPort(9093)}`],
    registryUrl: `http://${registry.getHost()}:${registry.getMappedPort(8080)}/apis/ccompat/v7`,
    description: 'testcontainers (Docker): cp-kafka 7.9 in KRaft mode + Apicurio Registry 3.3.3',
    stop: async () => {
      await Promise.all([kafka.stop(), registry.stop()]);
    },
  };
}

/**
 * The endpoints line of `stack.mjs up --json`: the last stdout line that is a JSON object. Tolerant of other
 * output on stdout (a tool's stray terminal codes must not break the demo or the test harness).
 */
export function parseStackEndpoints(stdout: string): { brokers: string; registryUrl: string } {
  for (const line of stdout.split('\n').reverse()) {
    const start = line.indexOf('{');
    if (start < 0) continue;
    try {
      const parsed = JSON.parse(line.slice(start)) as Partial<{ brokers: string; registryUrl: string }>;
      if (typeof parsed.brokers === 'string' && typeof parsed.registryUrl === 'string')
        return { brokers: parsed.brokers, registryUrl: parsed.registryUrl };
    } catch {
      // not the endpoints line
    }
  }
  throw new FatalError(
    'DEVSTACK_START_FAILED',
    `node scripts/stack.mjs up --json printed no endpoints; it printed: ${stdout.slice(0, 500)}`,
  );
}

function jvmToolsPresent(): boolean {
  return spawnSync('java', ['-version']).status === 0 && spawnSync('mvn', ['-v']).status === 0;
}

function fromJvm(): DevStack | null {
  const script = join(packageRoot(), 'scripts', 'stack.mjs');
  if (!existsSync(script) || !jvmToolsPresent()) return null;
  const up = spawnSync(process.execPath, [script, 'up', '--json'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (up.status !== 0) {
    throw new FatalError(
      'DEVSTACK_START_FAILED',
      `the local JVM stack did not start (node scripts/stack.mjs up exited ${up.status}); its output is above`,
    );
  }
  const endpoints = parseStackEndpoints(up.stdout);
  return {
    brokers: [endpoints.brokers],
    registryUrl: endpoints.registryUrl,
    description: 'local JVM stack (scripts/stack.mjs: Kafka and Apicurio Registry from Maven Central)',
    // Left running for warm reuse; `npm run stack:down` stops it.
    stop: async () => {},
  };
}

export async function provideStack(
  order: readonly StackSource[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<DevStack> {
  for (const source of order) {
    const stack =
      source === 'environment' ? fromEnvironment(env) : source === 'docker' ? await fromDocker() : fromJvm();
    if (stack) return stack;
  }
  throw new FatalError(
    'DEVSTACK_UNAVAILABLE',
    'a Kafka broker and a schema registry are needed and none could be had: set KAFKA_BROKERS and ' +
      'SCHEMA_REGISTRY_URL, or install Java 17+ and Maven (Kafka and Apicurio Registry then run locally from ' +
      'Maven Central), or start a Docker engine.',
  );
}
