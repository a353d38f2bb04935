/**
 * Start-up checks that turn a misconfigured endpoint into one actionable error before anything is built on
 * it. The registry client used later (@kafkajs/confluent-schema-registry) reports a wrong path, wrong
 * credentials and an unreachable host all alike ("HTTP 400"/"404: [object Object]"), so the connector asks
 * the registry itself first. Called once by ConnectorRuntime.start.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { FatalError, RetriableError } from '../errors/index.js';
import { probeSchemaRegistry, shownRegistryUrl, type SchemaRegistryProbe } from '../ops/checks.js';

const REGISTRY_TIMEOUT_MS = 10_000;

/** Resolves when `GET {schemaRegistry.url}/subjects` answers 200; otherwise throws what is wrong and what to do. */
export async function verifySchemaRegistry(probe: SchemaRegistryProbe): Promise<void> {
  let answer: { shown: string; statusCode: number };
  try {
    answer = await probeSchemaRegistry({ timeoutMs: REGISTRY_TIMEOUT_MS, ...probe });
  } catch (error) {
    const shown = shownRegistryUrl(probe.url);
    const reason =
      (error as NodeJS.ErrnoException).code ?? (error instanceof Error ? error.name : String(error));
    throw new RetriableError(
      'SCHEMA_REGISTRY_UNREACHABLE',
      `cannot reach the schema registry at ${shown} (${reason}): check schemaRegistry.url and that the registry ` +
        'is running and reachable from here',
      { cause: error },
    );
  }
  const { shown, statusCode } = answer;
  if (statusCode === 200) return;
  if (statusCode === 401 || statusCode === 403) {
    throw new FatalError(
      'SCHEMA_REGISTRY_AUTH_FAILED',
      `the schema registry at ${shown} refused the credentials (HTTP ${statusCode}): check schemaRegistry.username ` +
        'and schemaRegistry.password',
    );
  }
  if (statusCode === 404) {
    throw new FatalError(
      'SCHEMA_REGISTRY_URL_WRONG',
      `${shown} is not a Confluent-compatible schema registry API (GET …/subjects answered HTTP 404): set ` +
        'schemaRegistry.url to the API base, e.g. http://registry:8081 (Confluent, Karapace) or ' +
        'http://registry:8080/apis/ccompat/v7 (Apicurio)',
    );
  }
  throw new RetriableError(
    statusCode >= 500 ? 'SCHEMA_REGISTRY_UNAVAILABLE' : 'SCHEMA_REGISTRY_REFUSED',
    `the schema registry at ${shown} answered HTTP ${statusCode} to GET …/subjects: check schemaRegistry.url and the registry's logs`,
  );
}

export interface RegistryWait {
  logger: { warn(details: object, message: string): void };
  /** Aborted (SIGTERM): the wait ends with the last error. */
  signal?: AbortSignal;
  /** Backoff between probes: from this, doubled up to maxDelayMs. */
  initialDelayMs?: number;
  maxDelayMs?: number;
}

/**
 * verifySchemaRegistry until it passes. A registry that is down or failing when the connector starts (a
 * retriable error) is waited for, with capped exponential backoff and a warning per attempt, instead of ending
 * the process: under a supervisor that would be a crash loop for as long as the registry is down (seen by the
 * chaos suite). A wrong URL or wrong credentials still fail at once (FatalError).
 */
export async function waitForSchemaRegistry(probe: SchemaRegistryProbe, wait: RegistryWait): Promise<void> {
  let delayMs = wait.initialDelayMs ?? 1000;
  for (;;) {
    try {
      await verifySchemaRegistry(probe);
      return;
    } catch (error) {
      if (!(error instanceof RetriableError) || wait.signal?.aborted) throw error;
      wait.logger.warn(
        { code: error.code, retryInMs: delayMs, err: error },
        'the schema registry is not available yet; waiting for it',
      );
      await sleep(delayMs, undefined, wait.signal ? { signal: wait.signal } : {}).catch(() => {
        throw error;
      });
      delayMs = Math.min(wait.maxDelayMs ?? 30_000, delayMs * 2);
    }
  }
}
