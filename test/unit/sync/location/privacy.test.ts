import { describe, expect, it } from 'vitest';
import type { ListedCall } from '../../../../src/sync/model.js';
import { applyPrivacy, completeCall } from '../../../../src/sync/location/privacy.js';

const listed: ListedCall = {
  uid: 'c1',
  locationUid: 'L',
  updatedAt: '2024-03-01T12:00:00Z',
  locationPhoneNumber: '+1000',
  customerPhoneNumber: '+2000',
  startedAt: null,
  endedAt: null,
  isPrivate: null,
  conversationUid: null,
};
const enrichment = (isPrivate: boolean | null) => ({
  startedAt: '2024-03-01T11:00:00Z',
  endedAt: '2024-03-01T11:01:00Z',
  isPrivate,
  conversationUid: 'v',
});

describe('applyPrivacy', () => {
  it('publishes the number of a call known to be public under redact-unless-public', () => {
    const call = applyPrivacy(completeCall(listed, enrichment(false)), 'redact-unless-public');
    expect(call).toMatchObject({
      customerPhoneNumber: '+2000',
      customerPhoneNumberRedacted: false,
      enriched: true,
      isPrivate: false,
    });
  });

  it('redacts a private call', () => {
    expect(applyPrivacy(completeCall(listed, enrichment(true)), 'redact-unless-public')).toMatchObject({
      customerPhoneNumber: null,
      customerPhoneNumberRedacted: true,
    });
  });

  it('redacts when privacy is unknown: not enriched, or enriched with a null flag', () => {
    expect(applyPrivacy(completeCall(listed, null), 'redact-unless-public')).toMatchObject({
      customerPhoneNumber: null,
      customerPhoneNumberRedacted: true,
      enriched: false,
    });
    expect(applyPrivacy(completeCall(listed, enrichment(null)), 'redact-unless-public')).toMatchObject({
      customerPhoneNumber: null,
      customerPhoneNumberRedacted: true,
    });
  });

  it('does not trust an isPrivate=false the listing itself carried', () => {
    expect(
      applyPrivacy(completeCall({ ...listed, isPrivate: false }, null), 'redact-unless-public'),
    ).toMatchObject({ customerPhoneNumber: null });
  });

  it('publishes isPrivate as unknown (null) when the call was not enriched, whatever the listing said', () => {
    // Call.isPrivate is null when not enriched: a consumer must not read an unverified false as "public".
    expect(completeCall({ ...listed, isPrivate: false }, null).isPrivate).toBeNull();
  });

  it('redacts everything under redact-always', () => {
    expect(applyPrivacy(completeCall(listed, enrichment(false)), 'redact-always')).toMatchObject({
      customerPhoneNumber: null,
      customerPhoneNumberRedacted: true,
    });
  });

  it('does not flag a redaction when there was no number', () => {
    expect(
      applyPrivacy(
        completeCall({ ...listed, customerPhoneNumber: null }, enrichment(true)),
        'redact-unless-public',
      ).customerPhoneNumberRedacted,
    ).toBe(false);
  });

  it('keeps the listing authoritative for updatedAt and numbers while taking enriched times', () => {
    const call = completeCall(listed, enrichment(false));
    expect(call).toMatchObject({
      updatedAt: listed.updatedAt,
      locationPhoneNumber: '+1000',
      startedAt: '2024-03-01T11:00:00Z',
      conversationUid: 'v',
    });
  });
});
