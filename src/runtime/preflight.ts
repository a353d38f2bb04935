/**
 * Start-up checks that turn a misconfigured endpoint into one actionable error before anything is built on
 * it. The registry client used later (@kafkajs/confluent-schema-registry) reports a wrong path, wrong
 * credentials and an unreachable host all alike ("HTTP 400"/"404: [object Object]"), so the connector asks
 * the registry itself first. Called once by ConnectorRuntime.start.
 */
import { untrustedCertificateCode } from '../https/dispatcher.js';
import { FatalError, RetriableError } from '../errors/index.js';
import { probeSchemaRegistry, shownRegistryUrl, type SchemaRegistryProbe } from '../ops/checks.js';
import { waitUntilAvailable, type AvailabilityWait } from './wait-until-available.js';

const REGISTRY_TIMEOUT_MS = 10_000;

/** Resolves when `GET {schemaRegistry.url}/subjects` answers 200; otherwise throws what is wrong and what to do. */
export async function verifySchemaRegistry(probe: SchemaRegistryProbe): Promise<void> {
  let answer: { shown: string; statusCode: number };
  try {
    answer = await probeSchemaRegistry({ timeoutMs: REGISTRY_TIMEOUT_MS, ...probe });
  } catch (error) {
    const shown = shownRegistryUrl(probe.url);
    const tlsCode = untrustedCertificateCode(error);
    if (tlsCode !== undefined) {
      throw new FatalError(
        'SCHEMA_REGISTRY_TLS_UNTRUSTED',
        `the certificate of the schema registry at ${shown} is not trusted (${tlsCode}): if it is signed by a ` +
          'private CA, set schemaRegistry.caFile to that CA certificate (PEM). Verification cannot be turned off',
        { cause: error },
      );
    }
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

export type RegistryWait = Omit<AvailabilityWait, 'what'>;

/**
 * verifySchemaRegistry until it passes (waitUntilAvailable): a registry that is down or failing when the
 * connector starts is waited for; a wrong URL or wrong credentials still fail at once (FatalError).
 */
export async function waitForSchemaRegistry(probe: SchemaRegistryProbe, wait: RegistryWait): Promise<void> {
  await waitUntilAvailable(() => verifySchemaRegistry(probe), { ...wait, what: 'the schema registry' });
}
