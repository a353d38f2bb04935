import { describe, expect, it } from 'vitest';
import { checkAuthorizeParams, decodeQueryStrict } from '../../../../src/sandbox/oauth/authorize.js';

const ctx = { client: { clientId: 'app', clientSecret: 's', redirectUri: 'https://app.test/cb' } };
const values = (q: string): Map<string, string[]> => decodeQueryStrict(q) ?? new Map<string, string[]>();
const good =
  'client_id=app&redirect_uri=https%3A%2F%2Fapp.test%2Fcb&scope=read_phones%20read_reviews&state=abc1';

describe('authorization request checks', () => {
  it('decodes %20 as a space but keeps + as a plus', () => {
    expect(decodeQueryStrict('a=x%20y&b=x+y')).toEqual(
      new Map([
        ['a', ['x y']],
        ['b', ['x+y']],
      ]),
    );
    expect(decodeQueryStrict('a=%E0%A4%A')).toBeNull();
  });

  it('accepts a complete, registered, https request and splits the scopes', () => {
    expect(checkAuthorizeParams(ctx, values(good))).toMatchObject({
      ok: true,
      scopes: ['read_phones', 'read_reviews'],
    });
  });

  it('refuses without redirecting when a parameter is missing or repeated, or the client or redirect is wrong', () => {
    for (const q of [
      good.replace('state=abc1', ''),
      `${good}&state=again`,
      good.replace('client_id=app', 'client_id=other'),
      good.replace('https%3A', 'http%3A'),
      good.replace('%2Fcb', '%2Fcb2'),
      good.replace('state=abc1', 'state=abc_1'),
    ]) {
      expect(checkAuthorizeParams(ctx, values(q)), q).toMatchObject({ ok: false, redirect: false });
    }
  });

  it('takes a S256 PKCE challenge and refuses plain, a missing method or a malformed challenge', () => {
    const challenge = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';
    expect(
      checkAuthorizeParams(ctx, values(`${good}&code_challenge=${challenge}&code_challenge_method=S256`)),
    ).toMatchObject({ ok: true, codeChallenge: challenge });
    expect(checkAuthorizeParams(ctx, values(good))).toMatchObject({ ok: true, codeChallenge: null });
    for (const q of [
      `${good}&code_challenge=${challenge}&code_challenge_method=plain`,
      `${good}&code_challenge=${challenge}`,
      `${good}&code_challenge=short&code_challenge_method=S256`,
    ]) {
      expect(checkAuthorizeParams(ctx, values(q)), q).toMatchObject({ ok: false, error: 'invalid_request' });
    }
  });

  it('redirects back with invalid_scope for unknown scopes', () => {
    expect(checkAuthorizeParams(ctx, values(good.replace('%20read_reviews', '+read_reviews')))).toMatchObject(
      {
        ok: false,
        redirect: true,
        error: 'invalid_scope',
      },
    );
  });
});
