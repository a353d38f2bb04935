/** `schemaRegistry`: the Confluent-compatible registry of the Avro schemas, its credentials and compatibility. */
import { z } from 'zod';

export const schemaRegistrySchema = z
  .object({
    url: z.url({
      protocol: /^https?$/,
      error: 'expected the http(s):// base of a Confluent-compatible API, e.g. http://registry:8081',
    }),
    username: z.string().optional(),
    password: z.string().optional(),
    /**
     * Extra CA bundle (PEM) trusted in addition to the system's for an https:// registry, e.g. a private
     * CA's (like api.caFile). Verification cannot be turned off. See docs/kafka-security.md.
     */
    caFile: z.string().min(1).optional(),
    /**
     * Compatibility level set on a subject the connector registers first. An existing subject must have
     * this level (the registry client checks it before registering a new schema version).
     */
    compatibility: z
      .enum([
        'BACKWARD',
        'BACKWARD_TRANSITIVE',
        'FORWARD',
        'FORWARD_TRANSITIVE',
        'FULL',
        'FULL_TRANSITIVE',
        'NONE',
      ])
      .default('BACKWARD'),
  })
  .strict()
  .refine((r) => (r.username === undefined) === (r.password === undefined), {
    message: 'set both schemaRegistry.username and schemaRegistry.password, or neither',
    path: ['username'],
  })
  .refine((r) => r.caFile === undefined || r.url.toLowerCase().startsWith('https:'), {
    message:
      'schemaRegistry.caFile applies to an https:// registry: use https:// in schemaRegistry.url, or drop caFile',
    path: ['caFile'],
  });

export type SchemaRegistryConfig = z.infer<typeof schemaRegistrySchema>;
