/**
 * Dispatches a request to its handler by method and path, and turns a handler's unexpected failure into
 * a 500 (or a dropped connection when the response had already started), so one bad request never takes
 * the sandbox down.
 *
 *   GET  /oauth/authorize, POST /oauth/authorize (login form)   spec 4.1
 *   POST /oauth/token                                          spec 4.2
 *   GET  /v4/calls                                             spec 4.3 (our listing path)
 *   GET  /v4/calls/{uid}                                       spec 4.4
 *   *    /_sandbox/...                                         admin (sandbox-only)
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SandboxContext } from '../context.js';
import { handleAdmin } from '../admin/routes.js';
import { handleGetCall, handleListCalls } from '../api/calls.js';
import { handleAuthorizeGet, handleAuthorizePost } from '../oauth/authorize.js';
import { handleToken } from '../oauth/token.js';
import type { SandboxAdmin } from '../admin/admin.js';

function methodNotAllowed(ctx: SandboxContext, res: ServerResponse, allow: string): void {
  ctx.respond.apiError(res, 405, 'method_not_allowed', `allowed: ${allow}`, { allow });
}

async function dispatch(
  ctx: SandboxContext,
  admin: SandboxAdmin,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://sandbox.invalid');
  const path = url.pathname;
  const method = req.method ?? 'GET';
  if (path === '/oauth/authorize') {
    ctx.stats.authorizeRequests++;
    if (method === 'GET') handleAuthorizeGet(ctx, req, res);
    else if (method === 'POST') await handleAuthorizePost(ctx, req, res);
    else methodNotAllowed(ctx, res, 'GET, POST');
    return;
  }
  if (path === '/oauth/token') {
    if (method === 'POST') await handleToken(ctx, req, res);
    else methodNotAllowed(ctx, res, 'POST');
    return;
  }
  if (path === '/v4/calls') {
    if (method === 'GET') await handleListCalls(ctx, req, res, url.searchParams);
    else methodNotAllowed(ctx, res, 'GET');
    return;
  }
  if (path.startsWith('/v4/calls/')) {
    const raw = path.slice('/v4/calls/'.length);
    let uid: string | null = null;
    try {
      uid = decodeURIComponent(raw);
    } catch {
      uid = null;
    }
    if (uid === null || uid === '' || raw.includes('/'))
      ctx.respond.apiError(res, 404, 'not_found', 'no such resource');
    else if (method === 'GET') await handleGetCall(ctx, req, res, uid);
    else methodNotAllowed(ctx, res, 'GET');
    return;
  }
  if (path.startsWith('/_sandbox/')) {
    await handleAdmin(ctx, admin, req, res, path, url.searchParams);
    return;
  }
  ctx.respond.apiError(res, 404, 'not_found', 'no such resource');
}

export function createRequestHandler(
  ctx: SandboxContext,
  admin: SandboxAdmin,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    ctx.stats.requests++;
    // The API's own clock, as a real API's Date header and its reset times come from one clock (moved by
    // advanceClock like every time the sandbox writes); Node would write the machine's.
    res.setHeader('date', new Date(ctx.clock.nowMs()).toUTCString());
    dispatch(ctx, admin, req, res).catch((error: unknown) => {
      if (res.headersSent) {
        res.socket?.destroy();
        return;
      }
      ctx.respond.apiError(res, 500, 'server_error', 'internal error in the sandbox');
      process.emitWarning(
        `sandbox handler failed: ${error instanceof Error ? error.message : String(error)}`,
      );
    });
  };
}
