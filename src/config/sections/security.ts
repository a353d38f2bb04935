/**
 * `security`: the settings that send credentials or data unprotected, and the consent keys that accept them.
 */
import { z } from 'zod';
import type { KafkaConfig } from './kafka.js';
import type { SchemaRegistryConfig } from './schema-registry.js';

/**
 * Explicit consent to settings that expose credentials or data in transit. Without it such settings are
 * refused at validation; with it they are accepted and warned about at every start (see insecureSettings).
 */
export const securitySchema = z
  .object({
    /** Accept SASL without TLS (credentials in clear) and kafka.ssl.rejectUnauthorized: false. */
    allowInsecureKafka: z.boolean().default(false),
    /** Accept schemaRegistry.username/password over http:// (basic auth in clear). */
    allowInsecureRegistry: z.boolean().default(false),
  })
  .strict()
  .prefault({});

/** A setting that sends credentials or data unprotected, and the security.* key that accepts it. */
export interface InsecureSetting {
  path: string[];
  problem: string;
  consent: 'allowInsecureKafka' | 'allowInsecureRegistry';
}

/**
 * The insecure settings of a configuration: refused by the schema unless their consent key is set, and
 * then logged as warnings at start (`run`). Pure.
 */
export function insecureSettings(c: {
  kafka: KafkaConfig;
  schemaRegistry: SchemaRegistryConfig;
}): InsecureSetting[] {
  const found: InsecureSetting[] = [];
  const ssl = c.kafka.ssl;
  if (c.kafka.sasl !== undefined && (ssl === undefined || ssl === false)) {
    found.push({
      path: ['kafka', 'sasl'],
      problem: 'kafka.sasl without kafka.ssl sends the SASL credentials and every record unencrypted',
      consent: 'allowInsecureKafka',
    });
  }
  if (typeof ssl === 'object' && !ssl.rejectUnauthorized) {
    found.push({
      path: ['kafka', 'ssl', 'rejectUnauthorized'],
      problem:
        'kafka.ssl.rejectUnauthorized: false accepts any broker certificate (anyone in the path can impersonate the brokers)',
      consent: 'allowInsecureKafka',
    });
  }
  const sasl = c.kafka.sasl;
  const tokenUrl = sasl?.mechanism === 'oauthbearer' ? URL.parse(sasl.tokenEndpointUrl) : null;
  if (tokenUrl?.protocol === 'http:' && !isLoopback(tokenUrl.hostname)) {
    found.push({
      path: ['kafka', 'sasl', 'tokenEndpointUrl'],
      problem: 'kafka.sasl.tokenEndpointUrl over http:// sends the client secret and the tokens unencrypted',
      consent: 'allowInsecureKafka',
    });
  }
  const registryUrl = URL.parse(c.schemaRegistry.url);
  const basicAuth = c.schemaRegistry.username !== undefined || (registryUrl?.username ?? '') !== '';
  // Over loopback the credentials never leave the host (the demo, a local registry): not refused.
  const loopback = isLoopback(registryUrl?.hostname ?? '');
  if (basicAuth && registryUrl?.protocol === 'http:' && !loopback) {
    found.push({
      path: ['schemaRegistry', 'url'],
      problem:
        'schemaRegistry basic auth (username/password or URL userinfo) over http:// sends the credentials unencrypted',
      consent: 'allowInsecureRegistry',
    });
  }
  return found;
}

/** Whether a URL's hostname is this machine: credentials sent there never leave the host. */
function isLoopback(hostname: string): boolean {
  return /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/i.test(hostname);
}
