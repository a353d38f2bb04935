/** `oauth`: the OAuth client of the calls API, its grant, refresh timing and the encrypted token store. */
import { z } from 'zod';
import { durationMs } from '../duration.js';

/**
 * `type` may be left out (docs/configuration.md: default `file`), so `store: { path: ... }` is a file store; the
 * discriminated union needs the tag, hence the preprocess.
 */
const tokenStoreSchema = z.preprocess(
  (value) =>
    value !== null && typeof value === 'object' && !Array.isArray(value) && !('type' in value)
      ? { type: 'file', ...value }
      : value,
  z.discriminatedUnion('type', [
    z
      .object({
        type: z.literal('file'),
        path: z.string().min(1).default('./.calls-connector/tokens.enc'),
      })
      .strict(),
    z
      .object({
        type: z.literal('kafka'),
        topic: z.string().min(1).default('calls-connector-tokens'),
      })
      .strict(),
  ]),
);

export const oauthSchema = z
  .object({
    /** Base of /oauth/authorize and /oauth/token; defaults to api.baseUrl (the OAuth paths carry no /v4). */
    baseUrl: z
      .url({
        protocol: /^https?$/,
        error: 'expected an absolute https:// URL, e.g. https://auth.calls.example.com',
      })
      .optional(),
    clientId: z.string().min(1),
    /** Use `${ENV}` interpolation or clientSecretFile; never put the secret itself in a committed file. */
    clientSecret: z.string().min(1).optional(),
    clientSecretFile: z.string().min(1).optional(),
    redirectUri: z.url({ protocol: /^https$/, error: 'redirectUri must be an https:// URL (spec 4.1)' }),
    scopes: z.array(z.string().regex(/^\S+$/)).min(1).default(['read_phones']),
    /** Name of the grant (the authorized user); sources refer to it. */
    grant: z.string().min(1).default('default'),
    /** Refresh this long before the 10 h expiry. */
    refreshBeforeExpiryMs: durationMs().default(10 * 60_000),
    /** Lifetime assumed for an access token when the token response has no `expires_in` (spec 8: 10 hours). */
    accessTokenLifetimeMs: durationMs(60_000).default(10 * 3600_000),
    /** How long the state of an authorization URL (`auth url`, `auth login`) can be redeemed. */
    stateTtlMs: durationMs(1_000).default(10 * 60_000),
    /**
     * After the token endpoint refuses a refresh token, wait this long for another instance's rotated token to
     * appear in the store before declaring the grant revoked (several instances sharing a Kafka store).
     */
    rotationGraceMs: durationMs().default(3_000),
    /**
     * Each instance refreshes up to this much earlier than refreshBeforeExpiryMs (a random share, chosen
     * at start), so instances sharing a grant do not refresh at the same moment.
     */
    refreshJitterMs: durationMs().default(5 * 60_000),
    store: tokenStoreSchema.default({ type: 'file', path: './.calls-connector/tokens.enc' }),
    /** Encryption key for the token store: 32 bytes, base64 or hex, from this env var ... */
    keyEnv: z.string().min(1).default('CALLS_CONNECTOR_TOKEN_KEY'),
    /** ... or from this file (never stored beside the token data). */
    keyFile: z.string().min(1).optional(),
  })
  .strict()
  .refine((o) => o.clientSecret !== undefined || o.clientSecretFile !== undefined, {
    message: 'set oauth.clientSecret (from ${ENV}) or oauth.clientSecretFile',
    path: ['clientSecret'],
  });

export type OAuthConfig = z.infer<typeof oauthSchema>;
