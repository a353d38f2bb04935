/** `privacy`: what of a call's personal data is published. */
import { z } from 'zod';

export const privacySchema = z
  .object({
    /**
     * redact-unless-public: publish customerPhoneNumber only when GET /v4/calls/{uid} said isPrivate=false.
     * redact-always: never publish it.
     */
    customerPhoneNumber: z.enum(['redact-unless-public', 'redact-always']).default('redact-unless-public'),
  })
  .strict()
  .prefault({});
