/**
 * Integration tests need a real Kafka broker (KRaft) and a real Confluent-compatible schema registry, found in
 * the one order the demo uses too (`stackOrder` in tools/devstack/stack-provider.ts): KAFKA_BROKERS +
 * SCHEMA_REGISTRY_URL from the environment; the local JVM stack of scripts/stack.mjs (Java 21+ and Maven); a
 * reachable Docker engine (testcontainers); otherwise the run fails at once, saying per source what is missing —
 * integration tests are never skipped silently. CALLS_STACK=jvm (or docker) uses only that source.
 * At the end it stops what it started, and says what it leaves running (the JVM stack) and how to stop it.
 */
import type { TestProject } from 'vitest/node';
import { provideStack } from '../../tools/devstack/stack-provider.js';

declare module 'vitest' {
  export interface ProvidedContext {
    kafkaBrokers: string;
    schemaRegistryUrl: string;
    stackSource: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const stack = await provideStack();
  process.stderr.write(
    `[integration stack] using ${stack.description}: brokers=${stack.brokers.join(',')} registry=${stack.registryUrl}\n`,
  );
  project.provide('kafkaBrokers', stack.brokers.join(','));
  project.provide('schemaRegistryUrl', stack.registryUrl);
  project.provide('stackSource', stack.description);
  return async () => {
    await stack.stop();
    if (stack.leftRunning !== undefined) process.stderr.write(`[integration stack] ${stack.leftRunning}\n`);
  };
}
