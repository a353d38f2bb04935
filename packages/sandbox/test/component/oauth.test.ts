/**
 * The OAuth checks of spec 4.1 (authorization endpoint), 4.2 (token endpoint) and 5, over HTTPS.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type RunningSandbox } from '../../src/index.js';
import { SandboxTestClient, type Reply } from './client.js';

const REDIRECT = 'https://app.example.test/oauth/callback';

function authorizePath(params: Record<string, string>): string {
  // Encoded by hand: encodeURIComponent writes a space as %20, as spec 4.1 asks.
  return `/oauth/authorize?${Object.entries(params)
    .map(([k, v]) => `${k}=${encodeURIComponent(v)}`)
    .join('&')}`;
}

function redirectOf(reply: Reply): URL {
  expect(reply.status).toBe(302);
  return new URL(String(reply.headers.location));
}

describe('OAuth with the login page (spec 4.1, 4.2, 5)', () => {
  let sandbox: RunningSandbox;
  let client: SandboxTestClient;
  const valid = {
    client_id: 'app-1',
    redirect_uri: REDIRECT,
    scope: 'read_phones read_reviews',
    state: 'Xyz123',
  };

  beforeAll(async () => {
    sandbox = await startSandbox({
      client: { clientId: 'app-1', clientSecret: 'app-1-secret', redirectUri: REDIRECT },
      data: { seed: 3, locations: 2, callsPerLocation: 30 },
    });
    client = new SandboxTestClient(sandbox);
  });
  afterAll(async () => {
    await client.close();
    await sandbox.close();
  });

  function submitLogin(fields: Record<string, string>): Promise<Reply> {
    return client.send('POST', '/oauth/authorize', {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    });
  }

  async function codeFor(state = 'Abc123'): Promise<string> {
    const reply = await submitLogin({
      ...valid,
      state,
      username: 'sandbox',
      password: 'sandbox',
      decision: 'approve',
    });
    return redirectOf(reply).searchParams.get('code') as string;
  }

  function redeem(code: string, overrides: Record<string, string> = {}): Promise<Reply> {
    return client.postJson('/oauth/token', {
      grant_type: 'authorization_code',
      code,
      client_id: 'app-1',
      client_secret: 'app-1-secret',
      redirect_uri: REDIRECT,
      ...overrides,
    });
  }

  describe('GET /oauth/authorize', () => {
    it('serves a login and approve page for a valid request', async () => {
      const reply = await client.send('GET', authorizePath(valid));
      expect(reply.status).toBe(200);
      expect(reply.headers['content-type']).toMatch(/^text\/html/);
      expect(reply.text).toContain('<form method="post" action="/oauth/authorize">');
      expect(reply.text).toContain('name="password"');
      expect(reply.text).toContain('value="approve"');
      expect(reply.text).toContain('<li>read_reviews</li>');
      // Browsers apply form-action to the redirect after the form: the client's origin must be allowed.
      expect(reply.headers['content-security-policy']).toContain(
        `form-action 'self' ${new URL(REDIRECT).origin}`,
      );
    });

    it.each(['client_id', 'redirect_uri', 'scope', 'state'])(
      'rejects a request without %s with 400',
      async (name) => {
        const params: Record<string, string> = { ...valid };
        delete params[name];
        const reply = await client.send('GET', authorizePath(params));
        expect(reply.status).toBe(400);
        expect(reply.headers.location).toBeUndefined();
      },
    );

    it('rejects an unknown client_id without redirecting', async () => {
      const reply = await client.send('GET', authorizePath({ ...valid, client_id: 'someone-else' }));
      expect(reply.status).toBe(400);
      expect(reply.headers.location).toBeUndefined();
    });

    it('rejects a redirect_uri that differs from the registered one', async () => {
      const reply = await client.send('GET', authorizePath({ ...valid, redirect_uri: `${REDIRECT}/other` }));
      expect(reply.status).toBe(400);
      expect(reply.text).toContain('does not match');
    });

    it('rejects a redirect_uri that is not HTTPS', async () => {
      const reply = await client.send(
        'GET',
        authorizePath({ ...valid, redirect_uri: REDIRECT.replace('https:', 'http:') }),
      );
      expect(reply.status).toBe(400);
      expect(reply.text).toContain('https');
    });

    it('rejects a state that is not alphanumeric', async () => {
      for (const state of ['abc-123', 'a b', 'ünï']) {
        const reply = await client.send('GET', authorizePath({ ...valid, state }));
        expect(reply.status, state).toBe(400);
      }
    });

    it('reads scopes separated by %20, and treats a + as part of a scope name (invalid_scope)', async () => {
      const ok = await client.send('GET', authorizePath(valid));
      expect(ok.status).toBe(200);
      const raw = `/oauth/authorize?client_id=app-1&redirect_uri=${encodeURIComponent(REDIRECT)}&scope=read_phones+read_reviews&state=Xyz123`;
      const plus = redirectOf(await client.send('GET', raw));
      expect(plus.searchParams.get('error')).toBe('invalid_scope');
      expect(plus.searchParams.get('state')).toBe('Xyz123');
    });

    it('redirects unknown scopes back with error=invalid_scope and the state', async () => {
      const url = redirectOf(
        await client.send('GET', authorizePath({ ...valid, scope: 'read_phones write_everything' })),
      );
      expect(`${url.origin}${url.pathname}`).toBe(REDIRECT);
      expect(url.searchParams.get('error')).toBe('invalid_scope');
      expect(url.searchParams.get('state')).toBe('Xyz123');
    });
  });

  describe('the login form', () => {
    it('redirects to the redirect_uri with a code and the state unchanged on approval', async () => {
      const reply = await submitLogin({
        ...valid,
        username: 'sandbox',
        password: 'sandbox',
        decision: 'approve',
      });
      const url = redirectOf(reply);
      expect(`${url.origin}${url.pathname}`).toBe(REDIRECT);
      expect(url.searchParams.get('code')).toMatch(/^\S{20,}$/);
      expect(url.searchParams.get('state')).toBe('Xyz123');
    });

    it('shows the page again with 401 on a wrong password, without a code', async () => {
      const reply = await submitLogin({
        ...valid,
        username: 'sandbox',
        password: 'nope',
        decision: 'approve',
      });
      expect(reply.status).toBe(401);
      expect(reply.text).toContain('Wrong username or password');
    });

    it('redirects with error=access_denied and the state when the user denies', async () => {
      const url = redirectOf(await submitLogin({ ...valid, decision: 'deny' }));
      expect(url.searchParams.get('error')).toBe('access_denied');
      expect(url.searchParams.get('state')).toBe('Xyz123');
      expect(url.searchParams.get('code')).toBeNull();
    });
  });

  describe('POST /oauth/token', () => {
    it('redeems a code for exactly access_token and refresh_token, and the access token reads calls', async () => {
      const reply = await redeem(await codeFor());
      expect(reply.status).toBe(200);
      const body = reply.json as Record<string, string>;
      expect(Object.keys(body).sort()).toEqual(['access_token', 'refresh_token']);
      const list = await client.get('/v4/calls?limit=5', body.access_token);
      expect(list.status).toBe(200);
    });

    it('accepts only a JSON body: form encoding is rejected with 415', async () => {
      const reply = await client.send('POST', '/oauth/token', {
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code: 'x',
          client_id: 'app-1',
          client_secret: 'app-1-secret',
          redirect_uri: REDIRECT,
        }).toString(),
      });
      expect(reply.status).toBe(415);
      expect(reply.json).toMatchObject({ error: 'invalid_request' });
      const broken = await client.send('POST', '/oauth/token', {
        headers: { 'content-type': 'application/json' },
        body: '{"grant_type":',
      });
      expect(broken.status).toBe(400);
      expect(broken.json).toMatchObject({ error: 'invalid_request' });
    });

    it('counts token requests in the stats', async () => {
      const before = sandbox.admin.stats().tokenRequests;
      await redeem('unknown-code');
      expect(sandbox.admin.stats().tokenRequests).toBe(before + 1);
    });

    it('makes codes single-use: a replay fails with invalid_grant and revokes what the code gave', async () => {
      const code = await codeFor();
      const first = await redeem(code);
      const { access_token } = first.json as Record<string, string>;
      const again = await redeem(code);
      expect(again.status).toBe(400);
      expect(again.json).toMatchObject({ error: 'invalid_grant' });
      const list = await client.get('/v4/calls', access_token);
      expect(list.status).toBe(401);
    });

    it('binds a code to its redirect_uri', async () => {
      const reply = await redeem(await codeFor(), { redirect_uri: `${REDIRECT}/elsewhere` });
      expect(reply.status).toBe(400);
      expect(reply.json).toMatchObject({ error: 'invalid_grant' });
    });

    it('lets codes expire after a minute on the sandbox clock', async () => {
      const code = await codeFor();
      sandbox.admin.advanceClock(61_000);
      const reply = await redeem(code);
      expect(reply.status).toBe(400);
      expect(reply.json).toMatchObject({
        error: 'invalid_grant',
        error_description: expect.stringContaining('expired') as unknown,
      });
    });

    it('rejects a wrong client secret or an unknown client with 401 invalid_client', async () => {
      const wrong = await redeem(await codeFor(), { client_secret: 'guess' });
      expect(wrong.status).toBe(401);
      expect(wrong.json).toMatchObject({ error: 'invalid_client' });
      const unknown = await redeem(await codeFor(), { client_id: 'app-2' });
      expect(unknown.status).toBe(401);
      expect(wrong.text).not.toContain('app-1-secret');
    });

    it('rejects missing fields with invalid_request and other grant types with unsupported_grant_type', async () => {
      const missing = await client.postJson('/oauth/token', {
        grant_type: 'authorization_code',
        client_id: 'app-1',
        client_secret: 'app-1-secret',
      });
      expect(missing.status).toBe(400);
      expect(missing.json).toMatchObject({ error: 'invalid_request' });
      const other = await client.postJson('/oauth/token', {
        grant_type: 'password',
        client_id: 'app-1',
        client_secret: 'app-1-secret',
      });
      expect(other.status).toBe(400);
      expect(other.json).toMatchObject({ error: 'unsupported_grant_type' });
    });

    it('keeps access tokens valid for 10 hours on the sandbox clock, then answers 401 token_expired', async () => {
      const { access_token } = (await redeem(await codeFor())).json as Record<string, string>;
      sandbox.admin.advanceClock(10 * 3600_000 - 5_000);
      expect((await client.get('/v4/calls?limit=1', access_token)).status).toBe(200);
      sandbox.admin.advanceClock(5_000);
      const expired = await client.get('/v4/calls?limit=1', access_token);
      expect(expired.status).toBe(401);
      expect(expired.json).toMatchObject({ error: { code: 'token_expired' } });
      expect(expired.headers['www-authenticate']).toContain('error="invalid_token"');
    });

    it('refreshes with the refresh token of the first redemption, again and again without rotation', async () => {
      const { refresh_token } = (await redeem(await codeFor())).json as Record<string, string>;
      for (let i = 0; i < 2; i++) {
        const reply = await client.postJson('/oauth/token', {
          grant_type: 'refresh_token',
          refresh_token,
          client_id: 'app-1',
          client_secret: 'app-1-secret',
        });
        expect(reply.status).toBe(200);
        const body = reply.json as Record<string, string>;
        expect(body.refresh_token).toBe(refresh_token);
        expect((await client.get('/v4/calls?limit=1', body.access_token)).status).toBe(200);
      }
    });

    it('rejects an unknown refresh token with invalid_grant', async () => {
      const reply = await client.postJson('/oauth/token', {
        grant_type: 'refresh_token',
        refresh_token: 'sbx_rt_nope',
        client_id: 'app-1',
        client_secret: 'app-1-secret',
      });
      expect(reply.status).toBe(400);
      expect(reply.json).toMatchObject({ error: 'invalid_grant' });
    });
  });
});

describe('OAuth with auto-approve and rotating refresh tokens', () => {
  let sandbox: RunningSandbox;
  let client: SandboxTestClient;

  beforeAll(async () => {
    sandbox = await startSandbox({
      autoApprove: true,
      rotateRefreshTokens: true,
      data: { seed: 4, locations: 1, callsPerLocation: 10 },
    });
    client = new SandboxTestClient(sandbox);
  });
  afterAll(async () => {
    await client.close();
    await sandbox.close();
  });

  it('redirects straight to the redirect_uri with a code and the state', async () => {
    const { clientId, redirectUri } = sandbox.client;
    const url = redirectOf(
      await client.send(
        'GET',
        authorizePath({ client_id: clientId, redirect_uri: redirectUri, scope: 'read_phones', state: 'S1' }),
      ),
    );
    expect(`${url.origin}${url.pathname}`).toBe(redirectUri);
    expect(url.searchParams.get('state')).toBe('S1');
    expect(url.searchParams.get('code')).toEqual(expect.any(String));
  });

  it('retires the refresh token each refresh uses', async () => {
    const { refreshToken } = sandbox.issueTokens();
    const body = (refresh_token: string): Record<string, string> => ({
      grant_type: 'refresh_token',
      refresh_token,
      client_id: sandbox.client.clientId,
      client_secret: sandbox.client.clientSecret,
    });
    const first = await client.postJson('/oauth/token', body(refreshToken));
    expect(first.status).toBe(200);
    const next = (first.json as Record<string, string>).refresh_token as string;
    expect(next).not.toBe(refreshToken);
    const reused = await client.postJson('/oauth/token', body(refreshToken));
    expect(reused.status).toBe(400);
    expect(reused.json).toMatchObject({ error: 'invalid_grant' });
    expect((await client.postJson('/oauth/token', body(next))).status).toBe(200);
  });
});
