import { describe, expect, it } from 'vitest';
import { scrubKnownSecrets, scrubSecretsInText } from '../../../src/logging/scrub-text.js';

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

  it('removes bearer and basic credentials in any letter case', () => {
    expect(scrubSecretsInText('bearer abcdefghijkl BASIC dXNlcjpwYXNzd29yZA==')).toBe(
      'bearer [redacted] BASIC [redacted]',
    );
  });

  it('removes OAuth tokens and authorization codes from query strings and form bodies, keeping error codes', () => {
    expect(
      scrubSecretsInText(
        'GET /cb?code=Sx8f2kQp0aZr&state=s1 then grant_type=refresh_token&refresh_token=rt-1234',
      ),
    ).toBe('GET /cb?code=[redacted]&state=s1 then grant_type=refresh_token&refresh_token=[redacted]');
    expect(scrubSecretsInText('failed with code=AUTH_GRANT_REVOKED')).toBe(
      'failed with code=AUTH_GRANT_REVOKED',
    );
  });

  it('removes secret-named string members of JSON text at any depth, escaped quotes included', () => {
    const json = JSON.stringify({
      a: { b: { c: { d: { e: { Refresh_Token: 'rt-"x"-1', code: 'E_OK' } } } } },
    });
    expect(scrubSecretsInText(json)).toBe(
      '{"a":{"b":{"c":{"d":{"e":{"Refresh_Token":"[redacted]","code":"E_OK"}}}}}}',
    );
  });

  it('keeps the error codes of API error bodies readable, lower case included, and still removes authorization codes', () => {
    expect(scrubSecretsInText('{"error":{"code":"cursor_expired","message":"gone"}}')).toBe(
      '{"error":{"code":"cursor_expired","message":"gone"}}',
    );
    expect(scrubSecretsInText('{"code":"PAGINATION_TOKEN_STALE"} {"code":"expired"}')).toBe(
      '{"code":"PAGINATION_TOKEN_STALE"} {"code":"expired"}',
    );
    expect(scrubSecretsInText('{"code":"4f9c2a7be1d04e55"} {"code":"Sx8f2kQp0aZr"}')).toBe(
      '{"code":"[redacted]"} {"code":"[redacted]"}',
    );
  });

  it('is idempotent', () => {
    const once = scrubSecretsInText('http://u:p@h/ Bearer abcdefghijkl');
    expect(scrubSecretsInText(once)).toBe(once);
  });
});

describe('scrubKnownSecrets', () => {
  it('replaces every occurrence of each secret in text that came back from the server', () => {
    expect(scrubKnownSecrets('token abcd1234 and abcd1234, secret s3cr3t!', ['abcd1234', 's3cr3t!'])).toBe(
      'token [redacted] and [redacted], secret [redacted]',
    );
  });

  it('leaves text alone when a "secret" is too short to be one (avoids shredding the message)', () => {
    expect(scrubKnownSecrets('a b c', ['a'])).toBe('a b c');
  });
});
