import { describe, expect, it } from 'vitest';
import { scrubSecretsInText } from '../../../src/logging/scrub-text.js';

describe('scrubSecretsInText', () => {
  it('removes the whole userinfo of a URL, user and password', () => {
    expect(scrubSecretsInText('registry http://svc:s3cr3t-Pass@registry:8081/apis/ccompat/v7 failed')).toBe(
      'registry http://[redacted]@registry:8081/apis/ccompat/v7 failed',
    );
  });

  it('removes a token written as the user of a URL', () => {
    expect(scrubSecretsInText('"https://ghp_abcdefghijklmnop@example.test/x"')).toBe(
      '"https://[redacted]@example.test/x"',
    );
  });

  it('removes Bearer and Basic credentials but keeps the scheme', () => {
    expect(scrubSecretsInText('authorization: Bearer eyJhbGciOi.payload.sig; Basic dXNlcjpwYXNz')).toBe(
      'authorization: Bearer [redacted]; Basic [redacted]',
    );
  });

  it('leaves URLs without userinfo, e-mail addresses in query strings and prose alone', () => {
    const text = 'GET https://api.example.test/v4/calls?owner=a@b.test answered 200; Bearer scheme is fine';
    expect(scrubSecretsInText(text)).toBe(text);
  });

  it('is idempotent', () => {
    const once = scrubSecretsInText('http://u:p@h/ Bearer abcdefghijkl');
    expect(scrubSecretsInText(once)).toBe(once);
  });
});
