/** Endpoints of the integration stack chosen by global-setup.ts, plus helpers for unique names. */
import { randomUUID } from 'node:crypto';
import { inject } from 'vitest';

export function stackEndpoints(): { brokers: string[]; registryUrl: string } {
  return { brokers: inject('kafkaBrokers').split(','), registryUrl: inject('schemaRegistryUrl') };
}

/** A topic (or transactional id, or subject) name no other test uses, so test files never interfere. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}
