import { describe, expect, it } from 'vitest';
import { GrantStore } from '../../../../src/sandbox/oauth/grants.js';

const grant = { clientId: 'c', scopes: ['read_phones'], locations: ['l1'] };

function setup(rotate = false): { store: GrantStore; clock: { now: number } } {
  const clock = { now: 1_000 };
  return { store: new GrantStore(() => clock.now, { rotateRefreshTokens: rotate }), clock };
}

describe('GrantStore', () => {
  it('redeems a PKCE code only with the verifier of its S256 challenge, and burns it on a wrong one', () => {
    const { store } = setup();
    const verifier = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
    const challenge = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';
    const missing = store.issueCode(grant, 'https://x/cb', challenge);
    expect(store.redeemCode(missing, 'c', 'https://x/cb')).toMatchObject({
      ok: false,
      description: expect.stringContaining('code_verifier is required') as unknown,
    });
    const wrong = store.issueCode(grant, 'https://x/cb', challenge);
    expect(store.redeemCode(wrong, 'c', 'https://x/cb', `${verifier.slice(1)}A`)).toMatchObject({
      ok: false,
    });
    expect(store.redeemCode(wrong, 'c', 'https://x/cb', verifier)).toMatchObject({ ok: false });
    const right = store.issueCode(grant, 'https://x/cb', challenge);
    expect(store.redeemCode(right, 'c', 'https://x/cb', verifier)).toMatchObject({ ok: true });
  });

  it('redeems a code once, for the client and redirect_uri it was issued to', () => {
    const { store } = setup();
    const code = store.issueCode(grant, 'https://x/cb');
    expect(store.redeemCode(code, 'other', 'https://x/cb')).toMatchObject({ ok: false });
    expect(store.redeemCode(code, 'c', 'https://x/other')).toMatchObject({ ok: false });
    const first = store.redeemCode(code, 'c', 'https://x/cb');
    expect(first.ok).toBe(true);
    expect(store.redeemCode(code, 'c', 'https://x/cb')).toMatchObject({ ok: false, error: 'invalid_grant' });
    if (first.ok)
      expect(store.checkAccessToken(first.accessToken)).toMatchObject({ ok: false, error: 'invalid_token' });
  });

  it('lets codes expire after 60 s', () => {
    const { store, clock } = setup();
    const code = store.issueCode(grant, 'https://x/cb');
    clock.now += 60_001;
    expect(store.redeemCode(code, 'c', 'https://x/cb')).toMatchObject({
      ok: false,
      description: expect.stringContaining('expired') as unknown,
    });
  });

  it('keeps access tokens valid for exactly 10 hours', () => {
    const { store, clock } = setup();
    const { accessToken } = store.issuePair(grant);
    clock.now += 10 * 3600_000 - 1;
    expect(store.checkAccessToken(accessToken).ok).toBe(true);
    clock.now += 1;
    expect(store.checkAccessToken(accessToken)).toMatchObject({ ok: false, error: 'token_expired' });
  });

  it('returns the same refresh token without rotation, a new one with rotation', () => {
    const plain = setup().store;
    const pair = plain.issuePair(grant);
    expect(plain.refresh(pair.refreshToken, 'c')).toMatchObject({
      ok: true,
      refreshToken: pair.refreshToken,
    });
    const rotating = setup(true).store;
    const p = rotating.issuePair(grant);
    const next = rotating.refresh(p.refreshToken, 'c');
    expect(next.ok && next.refreshToken !== p.refreshToken).toBe(true);
    expect(rotating.refresh(p.refreshToken, 'c')).toMatchObject({ ok: false, error: 'invalid_grant' });
  });

  it('revokes every token on request', () => {
    const { store } = setup();
    const pair = store.issuePair(grant);
    expect(store.revokeAll({})).toEqual({ accessTokens: 1, refreshTokens: 1 });
    expect(store.checkAccessToken(pair.accessToken).ok).toBe(false);
    expect(store.refresh(pair.refreshToken, 'c').ok).toBe(false);
  });
});
