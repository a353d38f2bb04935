import { thrown } from '../../support/auth/thrown.js';
import { describe, expect, it } from 'vitest';
import {
  buildAuthorizeUrl,
  codeChallengeS256,
  isAlphanumericState,
  newCodeVerifier,
  newState,
} from '../../../src/auth/authorize-url.js';

describe('newState', () => {
  it('is alphanumeric, 32 characters long, and different every time', () => {
    const states = new Set(Array.from({ length: 200 }, () => newState()));
    expect(states.size).toBe(200);
    for (const state of states) expect(state).toMatch(/^[A-Za-z0-9]{32}$/);
  });

  it('uses all three character classes across many draws', () => {
    const all = Array.from({ length: 50 }, () => newState()).join('');
    expect(all).toMatch(/[A-Z]/);
    expect(all).toMatch(/[a-z]/);
    expect(all).toMatch(/[0-9]/);
  });
});

describe('buildAuthorizeUrl', () => {
  const request = {
    baseUrl: 'https://api.example.com/',
    clientId: 'client 1',
    redirectUri: 'https://127.0.0.1:8976/callback?x=1',
    scopes: ['read_phones', 'read_reviews'],
    state: 'abcDEF123',
    codeChallenge: codeChallengeS256('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk'),
  };

  it('asks for PKCE with the S256 challenge of the verifier (RFC 7636 appendix B vector)', () => {
    const url = new URL(buildAuthorizeUrl(request));
    expect(url.searchParams.get('code_challenge')).toBe('E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM');
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    const verifier = newCodeVerifier();
    expect(verifier).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(newCodeVerifier()).not.toBe(verifier);
  });

  it('joins scopes with %20, never +', () => {
    const url = buildAuthorizeUrl(request);
    expect(url).toContain('scope=read_phones%20read_reviews');
    expect(url).not.toContain('+');
  });

  it('sends all four parameters to {base}/oauth/authorize, percent-encoded', () => {
    const url = new URL(buildAuthorizeUrl(request));
    expect(url.origin + url.pathname).toBe('https://api.example.com/oauth/authorize');
    expect(url.searchParams.get('client_id')).toBe('client 1');
    expect(url.searchParams.get('redirect_uri')).toBe('https://127.0.0.1:8976/callback?x=1');
    expect(url.searchParams.get('state')).toBe('abcDEF123');
    expect(buildAuthorizeUrl(request)).toContain(
      'redirect_uri=https%3A%2F%2F127.0.0.1%3A8976%2Fcallback%3Fx%3D1',
    );
  });

  it('refuses an http redirect_uri', () => {
    expect(
      thrown(() => buildAuthorizeUrl({ ...request, redirectUri: 'http://127.0.0.1:8976/callback' })),
    ).toMatchObject({ code: 'AUTH_REDIRECT_URI_INVALID' });
  });

  it('refuses a state that is not alphanumeric', () => {
    expect(() => buildAuthorizeUrl({ ...request, state: 'a-b' })).toThrow(RangeError);
    expect(isAlphanumericState('a-b')).toBe(false);
  });
});
