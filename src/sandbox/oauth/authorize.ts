/**
 * GET/POST /oauth/authorize (spec 4.1, 5 steps 2-3): the user's browser lands here, logs in and approves.
 *
 * Checks, in this order (RFC 6749 4.1.2.1: never redirect to a URI that was not verified):
 * 1. every parameter present exactly once (client_id, redirect_uri, scope, state) - else 400 page;
 * 2. client_id registered - else 400 page;
 * 3. redirect_uri HTTPS and equal to the registered one - else 400 page;
 * 4. state alphanumeric - else 400 page (there is nothing safe to echo);
 * 5. scope: space-separated known scopes, URL-encoded with %20 - else redirect with error=invalid_scope.
 *    The query is decoded strictly: '+' is NOT a space here, so `read_phones+x` is one unknown scope.
 * Then the login + approve page (or, with autoApprove, the redirect straight away). Approving redirects to
 * redirect_uri with `code` and `state`; denying with `error=access_denied` and `state`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SandboxContext } from '../context.js';
import { BodyTooLargeError, mediaType, readBody } from '../http/respond.js';

export const KNOWN_SCOPES = [
  'read_phones',
  'read_locations',
  'read_reviews',
  'read_invoices',
  'read_messages',
  'read_feedback',
] as const;

const STATE = /^[A-Za-z0-9]+$/;
const PARAMS = ['client_id', 'redirect_uri', 'scope', 'state'] as const;
type AuthorizeParams = Record<(typeof PARAMS)[number], string>;
/** PKCE (RFC 7636): optional here, as on most servers; when given, only S256 is accepted. */
const PKCE_PARAMS = ['code_challenge', 'code_challenge_method'] as const;
/** A S256 challenge: base64url of a SHA-256 digest, 43 characters. */
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

type Check =
  | { ok: true; params: AuthorizeParams; scopes: string[]; codeChallenge: string | null }
  | { ok: false; redirect: boolean; error: string; message: string };

/** Strict query decoding: percent-escapes only ('+' stays '+'); null when the query is not decodable. */
export function decodeQueryStrict(rawQuery: string): Map<string, string[]> | null {
  const out = new Map<string, string[]>();
  if (rawQuery === '') return out;
  for (const part of rawQuery.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    try {
      const key = decodeURIComponent(eq < 0 ? part : part.slice(0, eq));
      const value = eq < 0 ? '' : decodeURIComponent(part.slice(eq + 1));
      out.set(key, [...(out.get(key) ?? []), value]);
    } catch {
      return null;
    }
  }
  return out;
}

/** Validates the four parameters (pure apart from reading the registered client). */
export function checkAuthorizeParams(
  ctx: Pick<SandboxContext, 'client'>,
  values: Map<string, string[]>,
): Check {
  const params: Partial<AuthorizeParams> = {};
  for (const name of PARAMS) {
    const all = values.get(name) ?? [];
    if (all.length === 0 || all[0] === '') {
      return { ok: false, redirect: false, error: 'invalid_request', message: `${name} is required` };
    }
    if (all.length > 1)
      return {
        ok: false,
        redirect: false,
        error: 'invalid_request',
        message: `${name} given more than once`,
      };
    params[name] = all[0];
  }
  const p = params as AuthorizeParams;
  if (p.client_id !== ctx.client.clientId) {
    return { ok: false, redirect: false, error: 'invalid_client', message: 'unknown client_id' };
  }
  if (!p.redirect_uri.startsWith('https://')) {
    return { ok: false, redirect: false, error: 'invalid_request', message: 'redirect_uri must use https' };
  }
  if (p.redirect_uri !== ctx.client.redirectUri) {
    return {
      ok: false,
      redirect: false,
      error: 'invalid_request',
      message: 'redirect_uri does not match the registered one',
    };
  }
  if (!STATE.test(p.state)) {
    return { ok: false, redirect: false, error: 'invalid_request', message: 'state must be alphanumeric' };
  }
  const scopes = p.scope.split(' ');
  const known: readonly string[] = KNOWN_SCOPES;
  const unknown = scopes.filter((s) => !known.includes(s));
  if (unknown.length > 0) {
    return {
      ok: false,
      redirect: true,
      error: 'invalid_scope',
      message: `unknown scope(s): ${unknown.join(', ')} (separate scopes with a space, encoded %20)`,
    };
  }
  const pkce = checkPkce(values);
  if (!pkce.ok) return pkce;
  return { ok: true, params: p, scopes, codeChallenge: pkce.challenge };
}

function checkPkce(
  values: Map<string, string[]>,
): { ok: true; challenge: string | null } | Extract<Check, { ok: false }> {
  const [challenge, ...moreChallenges] = values.get('code_challenge') ?? [];
  const [method, ...moreMethods] = values.get('code_challenge_method') ?? [];
  const refuse = (message: string): Extract<Check, { ok: false }> => ({
    ok: false,
    redirect: true,
    error: 'invalid_request',
    message,
  });
  if (moreChallenges.length > 0 || moreMethods.length > 0)
    return refuse('code_challenge and code_challenge_method may be given once');
  if (challenge === undefined || challenge === '') {
    return method === undefined ? { ok: true, challenge: null } : refuse('code_challenge is required');
  }
  if (method !== 'S256') return refuse('code_challenge_method must be S256 (plain is not accepted)');
  if (!S256_CHALLENGE.test(challenge)) return refuse('code_challenge is not a S256 challenge');
  return { ok: true, challenge };
}

function redirectTo(base: string, query: Record<string, string>): string {
  const url = new URL(base);
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
  // URLSearchParams writes spaces as '+'; the redirect carries none (codes and states are url-safe).
  return url.toString();
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function loginPage(
  ctx: SandboxContext,
  p: AuthorizeParams,
  scopes: string[],
  codeChallenge: string | null,
  error: string | null,
): string {
  const fields: [string, string][] = PARAMS.map((n) => [n, p[n]]);
  if (codeChallenge !== null)
    fields.push(['code_challenge', codeChallenge], ['code_challenge_method', 'S256']);
  const hidden = fields
    .map(([n, v]) => `<input type="hidden" name="${n}" value="${escapeHtml(v)}">`)
    .join('\n      ');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sandbox - authorize ${escapeHtml(p.client_id)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:4rem auto;padding:0 1rem}label{display:block;margin:.6rem 0}
input[type=text],input[type=password]{width:100%;padding:.4rem}button{margin:.8rem .4rem 0 0;padding:.5rem 1rem}.err{color:#b00}</style>
</head><body>
  <h1>Calls API sandbox</h1>
  <p>The application <strong>${escapeHtml(p.client_id)}</strong> asks for:</p>
  <ul>${scopes.map((s) => `<li>${escapeHtml(s)}</li>`).join('')}</ul>
  <p>on all ${ctx.store.locations.length} locations of the sandbox user.</p>
  ${error === null ? '' : `<p class="err">${escapeHtml(error)}</p>`}
  <form method="post" action="/oauth/authorize">
      ${hidden}
      <label>Username <input type="text" name="username" autocomplete="username" value="${escapeHtml(ctx.user.username)}"></label>
      <label>Password <input type="password" name="password" autocomplete="current-password"></label>
      <p><small>Sandbox login: ${escapeHtml(ctx.user.username)} / ${escapeHtml(ctx.user.password)}</small></p>
      <button type="submit" name="decision" value="approve">Log in and approve</button>
      <button type="submit" name="decision" value="deny">Deny</button>
  </form>
</body></html>`;
}

function approve(
  ctx: SandboxContext,
  res: ServerResponse,
  p: AuthorizeParams,
  scopes: string[],
  codeChallenge: string | null,
): void {
  const code = ctx.grants.issueCode(
    { clientId: p.client_id, scopes, locations: ctx.store.locations },
    p.redirect_uri,
    codeChallenge,
  );
  ctx.respond.redirect(res, redirectTo(p.redirect_uri, { code, state: p.state }));
}

function reject(
  ctx: SandboxContext,
  res: ServerResponse,
  check: Extract<Check, { ok: false }>,
  values: Map<string, string[]>,
): void {
  if (check.redirect) {
    const [redirectUri] = values.get('redirect_uri') ?? [];
    const [state] = values.get('state') ?? [];
    ctx.respond.redirect(
      res,
      redirectTo(redirectUri ?? ctx.client.redirectUri, {
        error: check.error,
        error_description: check.message,
        state: state ?? '',
      }),
    );
    return;
  }
  ctx.respond.html(
    res,
    400,
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sandbox - bad request</title></head>
<body><h1>Authorization request rejected</h1><p>${check.error}: ${escapeHtml(check.message)}</p></body></html>`,
  );
}

export function handleAuthorizeGet(ctx: SandboxContext, req: IncomingMessage, res: ServerResponse): void {
  const rawQuery = (req.url ?? '').split('?')[1] ?? '';
  const values = decodeQueryStrict(rawQuery.split('#')[0] ?? '');
  if (values === null) {
    reject(
      ctx,
      res,
      { ok: false, redirect: false, error: 'invalid_request', message: 'query is not decodable' },
      new Map(),
    );
    return;
  }
  const check = checkAuthorizeParams(ctx, values);
  if (!check.ok) {
    reject(ctx, res, check, values);
    return;
  }
  if (ctx.autoApprove) {
    approve(ctx, res, check.params, check.scopes, check.codeChallenge);
    return;
  }
  ctx.respond.html(res, 200, loginPage(ctx, check.params, check.scopes, check.codeChallenge, null), [
    new URL(check.params.redirect_uri).origin,
  ]);
}

/** The login form's submission (application/x-www-form-urlencoded, as browsers send forms). */
export async function handleAuthorizePost(
  ctx: SandboxContext,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  if (mediaType(req) !== 'application/x-www-form-urlencoded') {
    ctx.respond.html(
      res,
      415,
      '<!doctype html><p>The login form posts application/x-www-form-urlencoded.</p>',
    );
    return;
  }
  let body: string;
  try {
    body = await readBody(req);
  } catch (error) {
    if (!(error instanceof BodyTooLargeError)) throw error;
    ctx.respond.html(res, 413, '<!doctype html><p>Request too large.</p>');
    return;
  }
  const form = new URLSearchParams(body);
  const values = new Map<string, string[]>();
  for (const name of [...PARAMS, ...PKCE_PARAMS]) values.set(name, form.getAll(name));
  const check = checkAuthorizeParams(ctx, values);
  if (!check.ok) {
    reject(ctx, res, check, values);
    return;
  }
  if (form.get('decision') === 'deny') {
    ctx.respond.redirect(
      res,
      redirectTo(check.params.redirect_uri, { error: 'access_denied', state: check.params.state }),
    );
    return;
  }
  if (form.get('username') !== ctx.user.username || form.get('password') !== ctx.user.password) {
    ctx.respond.html(
      res,
      401,
      loginPage(ctx, check.params, check.scopes, check.codeChallenge, 'Wrong username or password.'),
      [new URL(check.params.redirect_uri).origin],
    );
    return;
  }
  approve(ctx, res, check.params, check.scopes, check.codeChallenge);
}
