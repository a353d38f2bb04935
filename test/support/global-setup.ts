/**
 * Integration tests need a real Kafka broker (KRaft) and a real Confluent-compatible schema registry.
 * This global setup chooses where they come from, in this order, and says which it chose:
 *   (a) KAFKA_BROKERS + SCHEMA_REGISTRY_URL from the environment;
 *   (b) a reachable Docker engine: testcontainers (Kafka + Apicurio Registry images);
 *   (c) Java 17+ and Maven: the local JVM stack of scripts/stack.mjs (Kafka and Apicurio from Maven Central);
 *   (d) otherwise it fails, naming what is missing. Integration tests are never skipped silently.
 */
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    kafkaBrokers: string;
    schemaRegistryUrl: string;
    stackSource: string;
  }
}

const repoRoot = resolve(import.meta.dirname, '..', '..');

function say(message: string): void {
  process.stderr.write(`[integration stack] ${message}\n`);
}

function dockerReachable(): boolean {
  const probe = spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], {
    encoding: 'utf8',
    timeout: 10_000,
  });
  return probe.status === 0 && probe.stdout.trim().length > 0;
}

function javaAvailable(): boolean {
  return (
    spawnSync('java', ['-version'], { encoding: 'utf8' }).status === 0 &&
    spawnSync('mvn', ['-v']).status === 0
  );
}

interface Stack {
  brokers: string;
  registryUrl: string;
  source: string;
  stop: () => Promise<void>;
}

async function fromDocker(): Promise<Stack> {
  const { GenericContainer, Wait } = await import('testcontainers');
  const { KafkaContainer } = await import('@testcontainers/kafka');
  const [kafka, registry] = await Promise.all([
    new KafkaContainer('confluentinc/cp-kafka:7.9.0')
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
    brokers: `${kafka.getHost()}:${kafka.getMappedPort(9093)}`,
    registryUrl: `http://${registry.getHost()}:${registry.getMappedPort(8080)}/apis/ccompat/v7`,
    source: 'testcontainers (Docker)',
    stop: async () => {
      await Promise.all([kafka.stop(), registry.stop()]);
    },
  };
}

function fromLocalJvmStack(): Stack {
  const script = resolve(repoRoot, 'scripts', 'stack.mjs');
  const up = spawnSync(process.execPath, [script, 'up', '--json'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (up.status !== 0)
    throw new Error(
      `the local JVM stack did not start (node scripts/stack.mjs up exited ${up.status}); see its output above`,
    );
  const endpoints = JSON.parse(up.stdout.trim().split('\n').pop() ?? '{}') as {
    brokers: string;
    registryUrl: string;
  };
  return {
    brokers: endpoints.brokers,
    registryUrl: endpoints.registryUrl,
    source: 'local JVM stack (scripts/stack.mjs: Kafka + Apicurio from Maven Central)',
    // Left running between local runs (warm reruns); CI's .ci/run stops it with `npm run stack:down`.
    stop: async () => {},
  };
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let stack: Stack;
  const envBrokers = process.env.KAFKA_BROKERS;
  const envRegistry = process.env.SCHEMA_REGISTRY_URL;
  if (envBrokers && envRegistry) {
    stack = {
      brokers: envBrokers,
      registryUrl: envRegistry,
      source: 'environment (KAFKA_BROKERS, SCHEMA_REGISTRY_URL)',
      stop: async () => {},
    };
  } else if (process.env.CALLS_TEST_STACK !== 'jvm' && dockerReachable()) {
    stack = await fromDocker();
  } else if (javaAvailable()) {
    stack = fromLocalJvmStack();
  } else {
    throw new Error(
      'integration tests need a Kafka broker and a schema registry, and none could be had: ' +
        'set KAFKA_BROKERS and SCHEMA_REGISTRY_URL, or start a Docker engine, or install Java 17+ and Maven ' +
        '(then `npm run stack:up` runs Kafka and Apicurio Registry locally).',
    );
  }
  say(`using ${stack.source}: brokers=${stack.brokers} registry=${stack.registryUrl}`);
  project.provide('kafkaBrokers', stack.brokers);
  project.provide('schemaRegistryUrl', stack.registryUrl);
  project.provide('stackSource', stack.source);
  return stack.stop;
}
