/** `privacy`: what of a call's personal data is published. */
import { z } from 'zod';

export const privacySchema = z
  .object({
    /**
     * redact-unless-public: publish customerPhoneNumber only when GET /v4/calls/{uid} said isPrivate=false.
     * redact-always: never publish it.
     */
    customerPhoneNumber: z.enum(['redact-unless-public', 'redact-always']).default('redact-unless-public'),
    /**
     * A page's single-call answers (isPrivate among them) older than this when the page commits are asked
     * again first: a page read ahead (a history page waiting for its turn) never publishes a number on an
     * old answer. At least 1 s.
     */
    maxEnrichmentAgeMs: z.number().int().min(1000).default(60_000),
  })
  .strict()
  .prefault({});
