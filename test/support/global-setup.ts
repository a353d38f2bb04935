/**
 * Integration tests need a real Kafka broker (KRaft) and a real Confluent-compatible schema registry.
 * The order: (a) KAFKA_BROKERS + SCHEMA_REGISTRY_URL from the environment; (b) a reachable Docker engine
 * (testcontainers); (c) Java 17+ and Maven (the local JVM stack of scripts/stack.mjs); (d) otherwise the run fails,
 * naming what is missing — integration tests are never skipped silently. CALLS_TEST_STACK=jvm skips Docker.
 */
import type { TestProject } from 'vitest/node';
import { provideStack, type StackSource } from '../../tools/devstack/stack-provider.js';

declare module 'vitest' {
  export interface ProvidedContext {
    kafkaBrokers: string;
    schemaRegistryUrl: string;
    stackSource: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const order: StackSource[] =
    process.env.CALLS_TEST_STACK === 'jvm' ? ['environment', 'jvm'] : ['environment', 'docker', 'jvm'];
  const stack = await provideStack(order);
  process.stderr.write(
    `[integration stack] using ${stack.description}: brokers=${stack.brokers.join(',')} registry=${stack.registryUrl}\n`,
  );
  project.provide('kafkaBrokers', stack.brokers.join(','));
  project.provide('schemaRegistryUrl', stack.registryUrl);
  project.provide('stackSource', stack.description);
  return () => stack.stop();
}
