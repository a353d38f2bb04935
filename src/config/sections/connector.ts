/** `connector` (the instance's name and mode) and `auth` (the static token of development). */
import { z } from 'zod';

export const connectorSchema = z
  .object({
    /** Names the transactional id, offset keys and client id: two instances with one name fence each other. */
    name: z.string().regex(/^[A-Za-z0-9._-]{1,100}$/, 'letters, digits, dot, dash and underscore only'),
    /**
     * single: one writing instance per name (a newer one fences the older, which stands by).
     * distributed: instances with one name share the locations through the consumer group
     * `<name>-instances` (one owner per offsets-topic partition).
     */
    mode: z.enum(['single', 'distributed']).default('single'),
  })
  .strict();

export const staticAuthSchema = z
  .object({
    /** A fixed access token, for development against the sandbox; production uses `oauth`. */
    staticToken: z.string().min(1).optional(),
  })
  .strict()
  .prefault({});
