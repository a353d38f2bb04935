/**
 * The connector's configuration: one schema, composed here of its sections (`sections/`, one module per
 * top-level key or pair of related keys), each with its defaults. Every name other modules use is exported
 * from this file. Config is an adapter (docs/architecture.md "Layers"): the one thing it takes from the sync
 * core is the stopped-location backoff's defaults (sync/scheduler/health-rule.ts, in sections/poll.ts); the core imports no
 * configuration.
 *
 * Keys the calls API spec marks "not shown" (listing path, items field, cursor field, token header,
 * error codes) are configuration (sections/api.ts), with the defaults our sandbox and the known API use.
 * docs/configuration.md is generated from this file (`npm run docs:config`; describe a new key in
 * tools/docs/config-descriptions.ts): a unit test fails while the two differ.
 */
import { z } from 'zod';
import { apiSchema } from './sections/api.js';
import { connectorSchema, staticAuthSchema } from './sections/connector.js';
import { kafkaSchema } from './sections/kafka.js';
import { oauthSchema } from './sections/oauth.js';
import { loggingSchema, metricsSchema } from './sections/observability.js';
import { lanesSchema, pollSchema } from './sections/poll.js';
import { privacySchema } from './sections/privacy.js';
import { schemaRegistrySchema } from './sections/schema-registry.js';
import { insecureSettings, securitySchema } from './sections/security.js';
import { sourceSchema } from './sections/sources.js';
import { webhooksSchema } from './sections/webhooks.js';

export { parseDurationMs } from './duration.js';
export { apiSchema, retrySchema, type ApiConfig, type RetryConfig } from './sections/api.js';
export { KAFKA_COMPRESSIONS, kafkaSchema, type KafkaConfig } from './sections/kafka.js';
export { oauthSchema, type OAuthConfig } from './sections/oauth.js';
export { schemaRegistrySchema, type SchemaRegistryConfig } from './sections/schema-registry.js';
export { insecureSettings, type InsecureSetting } from './sections/security.js';
export { webhooksSchema, type WebhooksConfig } from './sections/webhooks.js';

export const configSchema = z
  .object({
    connector: connectorSchema,
    api: apiSchema,
    /** Absent: a static token from `auth.staticToken` (development, tests). */
    oauth: oauthSchema.optional(),
    auth: staticAuthSchema,
    sources: z.array(sourceSchema).min(1),
    kafka: kafkaSchema,
    schemaRegistry: schemaRegistrySchema,
    poll: pollSchema,
    lanes: lanesSchema,
    privacy: privacySchema,
    metrics: metricsSchema,
    security: securitySchema,
    logging: loggingSchema,
    webhooks: webhooksSchema,
  })
  .strict()
  .refine((c) => c.oauth !== undefined || c.auth.staticToken !== undefined, {
    message: 'configure `oauth` (production) or `auth.staticToken` (development)',
    path: ['oauth'],
  })
  .superRefine((c, ctx) => {
    for (const insecure of insecureSettings(c)) {
      if (c.security[insecure.consent]) continue;
      ctx.addIssue({
        code: 'custom',
        path: insecure.path,
        message: `${insecure.problem}; fix it, or set security.${insecure.consent}: true to accept the risk`,
      });
    }
  })
  .superRefine((c, ctx) => {
    // One offset key per location: a location in two sources would be synced twice under two grants.
    const seen = new Set<string>();
    c.sources.forEach((source, i) =>
      source.locations.forEach((uid, j) => {
        const key = uid.toLowerCase();
        if (seen.has(key))
          ctx.addIssue({
            code: 'custom',
            path: ['sources', i, 'locations', j],
            message: `location ${uid} is listed twice in sources; list each location once`,
          });
        seen.add(key);
      }),
    );
  });

export type ConnectorConfig = z.infer<typeof configSchema>;
export type PrivacyPolicy = ConnectorConfig['privacy']['customerPhoneNumber'];
