/**
 * The customer phone number policy (spec 2.3: "Consumers must check isPrivate on GET /v4/calls/{uid}
 * before storing customerPhoneNumber"). Pure.
 *
 * - redact-unless-public (default): the number is published only when enrichment said isPrivate === false.
 *   Unknown (not enriched, the call vanished before GET, enrichment off) counts as private.
 * - redact-always: never published.
 */
import type { Call, Enrichment, ListedCall, PrivacyPolicy } from '../model.js';

/**
 * Builds the published Call from a listed call and its enrichment (null = not enriched). The listing stays
 * authoritative for uid, updatedAt and phone numbers; the enrichment supplies startedAt, endedAt, isPrivate
 * and conversationUid. Without enrichment isPrivate is null (unknown), even if the listing carried a value.
 */
export function completeCall(
  listed: ListedCall,
  enrichment: Enrichment | null,
): Omit<Call, 'customerPhoneNumberRedacted'> {
  return {
    ...listed,
    // The listing's isPrivate is not authoritative (spec 2.3: always null there): unknown unless enriched.
    isPrivate: null,
    ...(enrichment ?? {}),
    enriched: enrichment !== null,
  };
}

/** Applies the policy. `customerPhoneNumberRedacted` is true when a number was actually removed. */
export function applyPrivacy(call: Omit<Call, 'customerPhoneNumberRedacted'>, policy: PrivacyPolicy): Call {
  const publishable = policy === 'redact-unless-public' && call.enriched && call.isPrivate === false;
  if (publishable || call.customerPhoneNumber === null)
    return { ...call, customerPhoneNumberRedacted: false };
  return { ...call, customerPhoneNumber: null, customerPhoneNumberRedacted: true };
}
