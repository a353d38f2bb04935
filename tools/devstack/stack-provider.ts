/**
 * Where a development Kafka broker and schema registry come from, for the test suite and `calls-connector demo`.
 *
 * Sources, tried in one order for both (`stackOrder`):
 * - `environment`: KAFKA_BROKERS (comma-separated host:port) + SCHEMA_REGISTRY_URL;
 * - `jvm`: Java 21+ (17+ for Kafka alone) and Maven → scripts/stack.mjs (Kafka and Apicurio Registry from Maven
 *   Central, no Docker), left running for warm reuse;
 * - `docker`: a reachable Docker engine → testcontainers (apache/kafka in KRaft mode + Apicurio Registry images),
 *   stopped at the end.
 * When none is available the error says, per source, what is missing and how to get it. Never a fake broker or
 * registry.
 *
 * Production deployments never use this module: they name their brokers and registry in the config file.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { FatalError } from '../../src/errors/index.js';
import { packageRoot } from '../../src/package-info.js';
import { startApacheKafka } from './kafka-container.js';

export type StackSource = 'environment' | 'docker' | 'jvm';

/**
 * The Kafka release of the Docker path; the JVM path's default (scripts/stack.mjs) and docker-compose.yml run the
 * same one (a unit test holds them together). CI also runs the Kafka-facing tests against 3.9.2 on the JVM path.
 */
export const KAFKA_VERSION = '4.4.0';
export const REGISTRY_IMAGE = 'apicurio/apicurio-registry:3.3.3';

/**
 * The one order in which the tests and the demo look for a stack. Environment first (an explicit choice);
 * then the JVM stack, which stays running between runs (warm start in seconds; the demo's printed commands
 * keep working after it ends); Docker last, for machines without Java 21 and Maven.
 */
export const STACK_ORDER: readonly StackSource[] = ['environment', 'jvm', 'docker'];

/** `STACK_ORDER`, or only the environment and the source CALLS_STACK (or CALLS_TEST_STACK) names. */
export function stackOrder(env: NodeJS.ProcessEnv = process.env): readonly StackSource[] {
  const only = env.CALLS_STACK ?? env.CALLS_TEST_STACK;
  if (only === undefined || only === '') return STACK_ORDER;
  if (only !== 'jvm' && only !== 'docker')
    throw new FatalError('CONFIG_INVALID', `CALLS_STACK must be jvm or docker, not "${only}"`);
  return ['environment', only];
}

export interface DevStack {
  brokers: string[];
  registryUrl: string;
  /** Human-readable description of where the stack came from. */
  description: string;
  /**
   * Said once the caller is done when the stack outlives it (the JVM stack, left running for warm reuse):
   * what is still running and how to stop it. Undefined when `stop()` stops everything this provider started.
   */
  leftRunning?: string;
  /** Stops what this provider started (containers); a JVM stack is left running (see `leftRunning`). */
  stop(): Promise<void>;
}

/** A source that could not provide a stack, and why (said to the user when no source can). */
type Unavailable = { unavailable: string };

function fromEnvironment(env: NodeJS.ProcessEnv): DevStack | Unavailable {
  const brokers = env.KAFKA_BROKERS;
  const registryUrl = env.SCHEMA_REGISTRY_URL;
  if (!brokers || !registryUrl)
    return { unavailable: 'KAFKA_BROKERS and SCHEMA_REGISTRY_URL are not both set' };
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

async function fromDocker(): Promise<DevStack | Unavailable> {
  if (!dockerReachable())
    return {
      unavailable: 'no Docker engine answers (`docker info` failed); start one, or use the JVM stack',
    };
  let testcontainers: typeof import('testcontainers');
  try {
    testcontainers = await import('testcontainers');
  } catch {
    // a production install has no dev dependencies
    return { unavailable: 'testcontainers (a dev dependency) is not installed: run `npm ci`' };
  }
  const { GenericContainer, Wait } = testcontainers;
  const [kafka, registry] = await Promise.all([
    startApacheKafka(testcontainers, KAFKA_VERSION),
    new GenericContainer(REGISTRY_IMAGE)
      .withExposedPorts(8080)
      .withWaitStrategy(Wait.forHttp('/apis/ccompat/v7/subjects', 8080))
      .start(),
  ]);
  return {
    brokers: [kafka.bootstrap],
    registryUrl: `http://${registry.getHost()}:${registry.getMappedPort(8080)}/apis/ccompat/v7`,
    description: `testcontainers (Docker): apache/kafka:${KAFKA_VERSION} in KRaft mode + ${REGISTRY_IMAGE}`,
    stop: async () => {
      await Promise.all([kafka.container.stop(), registry.stop()]);
    },
  };
}

/** The last stdout line that is a JSON object `accept` takes (other output, stray terminal codes, is tolerated). */
function lastJsonLine<T>(
  stdout: string,
  accept: (value: Record<string, unknown>) => T | undefined,
): T | undefined {
  for (const line of stdout.split('\n').reverse()) {
    const start = line.indexOf('{');
    if (start < 0) continue;
    try {
      const found = accept(JSON.parse(line.slice(start)) as Record<string, unknown>);
      if (found !== undefined) return found;
    } catch {
      // not a JSON line
    }
  }
  return undefined;
}

/**
 * The endpoints line of `stack.mjs up --json`. Tolerant of other output on stdout (a tool's stray terminal codes
 * must not break the demo or the test harness).
 */
export function parseStackEndpoints(stdout: string): {
  brokers: string;
  registryUrl: string;
  foreign: boolean;
} {
  const endpoints = lastJsonLine(stdout, ({ brokers, registryUrl, foreign }) =>
    typeof brokers === 'string' && typeof registryUrl === 'string'
      ? { brokers, registryUrl, foreign: foreign === true }
      : undefined,
  );
  if (endpoints !== undefined) return endpoints;
  throw new FatalError(
    'DEVSTACK_START_FAILED',
    `node scripts/stack.mjs up --json printed no endpoints; it printed: ${stdout.slice(0, 500)}`,
  );
}

/** What scripts/stack.mjs would miss to start here (Java 17+/21+, Maven), asked before it fetches anything. */
export function parseStackCheck(stdout: string): string[] {
  const problems = lastJsonLine(stdout, ({ problems }) =>
    Array.isArray(problems) ? problems.map(String) : undefined,
  );
  return (
    problems ?? [
      `node scripts/stack.mjs check --json printed no verdict; it printed: ${stdout.slice(0, 500)}`,
    ]
  );
}

function fromJvm(): DevStack | Unavailable {
  const script = join(packageRoot(), 'scripts', 'stack.mjs');
  if (!existsSync(script)) return { unavailable: `${script} is missing (a source checkout has it)` };
  const check = spawnSync(process.execPath, [script, 'check', '--json'], { encoding: 'utf8' });
  if (check.status !== 0) return { unavailable: parseStackCheck(check.stdout ?? '').join('; ') };
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
    leftRunning: endpoints.foreign
      ? `The Kafka broker on ${endpoints.brokers} and the registry on ${endpoints.registryUrl} were already running, ` +
        "started by another checkout's scripts/stack.mjs: left as they were (that checkout's `npm run stack:down` stops them)."
      : `The local JVM stack (Kafka on ${endpoints.brokers}, registry on ${endpoints.registryUrl}) is left running ` +
        'so that the next run starts in seconds; `npm run stack:down` stops it.',
    stop: async () => {},
  };
}

export async function provideStack(
  order: readonly StackSource[] = stackOrder(),
  env: NodeJS.ProcessEnv = process.env,
): Promise<DevStack> {
  const reasons: string[] = [];
  for (const source of order) {
    const stack =
      source === 'environment' ? fromEnvironment(env) : source === 'docker' ? await fromDocker() : fromJvm();
    if (!('unavailable' in stack)) return stack;
    reasons.push(`${source}: ${stack.unavailable}`);
  }
  throw new FatalError(
    'DEVSTACK_UNAVAILABLE',
    'a Kafka broker and a schema registry are needed and none could be had. Set KAFKA_BROKERS and ' +
      'SCHEMA_REGISTRY_URL, or install Java 21+ and Maven (Kafka and Apicurio Registry then run locally from ' +
      'Maven Central: `apt-get install openjdk-21-jre-headless maven`, or STACK_JAVA_HOME pointing at a JDK 21+), ' +
      `or start a Docker engine. Tried, in order:\n  - ${reasons.join('\n  - ')}`,
  );
}
