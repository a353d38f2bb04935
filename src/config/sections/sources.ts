/** `sources`: the locations to read, each group under the OAuth grant whose token reads them. */
import { z } from 'zod';

const uuid = z.string().regex(/^[0-9a-fA-F-]{36}$/, 'a location uid is a UUID');

export const sourceSchema = z
  .object({
    /** The OAuth grant whose token reads these locations. */
    grant: z.string().min(1).default('default'),
    locations: z.array(uuid).min(1),
    /** First traversal's `since` for a location with no stored offset; absent = from the beginning. */
    startSince: z.iso
      .datetime({
        offset: true,
        error: 'expected an RFC 3339 date-time with a zone, e.g. 2024-05-01T00:00:00Z',
      })
      .optional(),
  })
  .strict();
