/**
 * The admin endpoint, under /_sandbox/ (JSON in, JSON out). Sandbox-only: it is not part of the calls API
 * and not behind OAuth; when an admin key is set, requests must carry it in `X-Sandbox-Admin-Key`.
 *
 *   GET  /_sandbox/locations                 -> {"data": [uid...]}
 *   GET  /_sandbox/truth?locationUid=U       -> {"data": [call...]}   listable calls in listing order
 *   POST /_sandbox/calls        {call fields} -> {"data": call}         add or update one call
 *   POST /_sandbox/calls/bulk {"locationUid", "count", "updatedAt"?, "privateRatio"?}
 *                                            -> {"data": {"count", "updatedAt"}} calls at one instant
 *   GET  /_sandbox/clock                     -> {"now": iso}
 *   POST /_sandbox/clock/advance {"ms": N}   -> {"now": iso}
 *   POST /_sandbox/tokens {"scopes"?, "locations"?}         -> {"access_token", "refresh_token"}
 *   POST /_sandbox/tokens/revoke {"accessTokens"?, "refreshTokens"?} -> {"revoked": {...}}
 *   GET  /_sandbox/faults / PUT /_sandbox/faults {partial}  -> {"data": settings}
 *   GET  /_sandbox/stats                     -> {"data": stats}
 *   PUT  /_sandbox/live {"updatesPerSecond", "createsPerSecond"} or false -> {"live": ...}
 *   /_sandbox/webhooks...                    the call.* webhooks (webhook-routes.ts)
 */
import { timingSafeEqual, createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { z, ZodError } from 'zod';
import type { SandboxContext } from '../context.js';
import { UnknownLocationError } from '../data/store.js';
import { mediaType, readBody } from '../http/respond.js';
import type { SandboxAdmin } from './admin.js';
import { handleWebhookAdmin } from './webhook-routes.js';

const liveSchema = z
  .object({ updatesPerSecond: z.number().min(0), createsPerSecond: z.number().min(0) })
  .strict();

function keyMatches(expected: string, given: string | string[] | undefined): boolean {
  if (typeof given !== 'string') return false;
  const a = createHash('sha256').update(expected).digest();
  const b = createHash('sha256').update(given).digest();
  return timingSafeEqual(a, b);
}

async function jsonBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  if (mediaType(req) !== 'application/json') throw new RangeError('admin requests send application/json');
  const text = await readBody(req, 1024 * 1024);
  const body: unknown = text === '' ? {} : JSON.parse(text);
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new RangeError('body must be a JSON object');
  return body as Record<string, unknown>;
}

function stringList(v: unknown, name: string): string[] | undefined {
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string'))
    throw new RangeError(`${name} must be a list of strings`);
  return v as string[];
}

function optionalBoolean(v: unknown, name: string): boolean | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'boolean') throw new RangeError(`${name} must be a boolean`);
  return v;
}

export async function handleAdmin(
  ctx: SandboxContext,
  admin: SandboxAdmin,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  query: URLSearchParams,
): Promise<void> {
  ctx.stats.adminRequests++;
  const { respond } = ctx;
  if (ctx.adminKey !== null && !keyMatches(ctx.adminKey, req.headers['x-sandbox-admin-key'])) {
    respond.apiError(res, 401, 'admin_key_required', 'send the admin key in X-Sandbox-Admin-Key');
    return;
  }
  const route = `${req.method ?? 'GET'} ${path}`;
  try {
    if (path.startsWith('/_sandbox/webhooks')) {
      await handleWebhookAdmin(admin.webhooks, respond, req, res, route, jsonBody);
      return;
    }
    switch (route) {
      case 'GET /_sandbox/locations':
        respond.json(res, 200, { data: ctx.store.locations });
        return;
      case 'GET /_sandbox/truth': {
        const locationUid = query.get('locationUid');
        if (locationUid === null) throw new RangeError('locationUid is required');
        respond.json(res, 200, { data: admin.truth(locationUid) });
        return;
      }
      case 'POST /_sandbox/calls':
        respond.json(res, 200, { data: admin.upsertCall(await jsonBody(req)) });
        return;
      case 'POST /_sandbox/calls/import':
        respond.json(res, 200, {
          data: admin.importCalls((await jsonBody(req)) as { locationUid: string; count: number }),
        });
        return;
      case 'GET /_sandbox/clock':
        respond.json(res, 200, { now: admin.now().toISOString() });
        return;
      case 'POST /_sandbox/clock/advance': {
        const { ms } = await jsonBody(req);
        if (typeof ms !== 'number') throw new RangeError('ms must be a number');
        admin.advanceClock(ms);
        respond.json(res, 200, { now: admin.now().toISOString() });
        return;
      }
      case 'POST /_sandbox/tokens': {
        const body = await jsonBody(req);
        const scopes = stringList(body.scopes, 'scopes');
        const locations = stringList(body.locations, 'locations');
        const pair = admin.issueTokens({
          ...(scopes ? { scopes } : {}),
          ...(locations ? { locations } : {}),
        });
        respond.json(res, 200, { access_token: pair.accessToken, refresh_token: pair.refreshToken });
        return;
      }
      case 'POST /_sandbox/tokens/revoke': {
        const body = await jsonBody(req);
        const accessTokens = optionalBoolean(body.accessTokens, 'accessTokens');
        const refreshTokens = optionalBoolean(body.refreshTokens, 'refreshTokens');
        const revoked = ctx.grants.revokeAll({
          ...(accessTokens === undefined ? {} : { accessTokens }),
          ...(refreshTokens === undefined ? {} : { refreshTokens }),
        });
        respond.json(res, 200, { revoked });
        return;
      }
      case 'GET /_sandbox/faults':
        respond.json(res, 200, { data: ctx.faults });
        return;
      case 'PUT /_sandbox/faults':
        admin.setFaults(await jsonBody(req));
        respond.json(res, 200, { data: ctx.faults });
        return;
      case 'PUT /_sandbox/live': {
        if (mediaType(req) !== 'application/json')
          throw new RangeError('admin requests send application/json');
        const body: unknown = JSON.parse(await readBody(req));
        if (body === false) admin.setLive(false);
        else admin.setLive(liveSchema.parse(body));
        respond.json(res, 200, { live: body });
        return;
      }
      case 'GET /_sandbox/stats':
        respond.json(res, 200, { data: admin.stats() });
        return;
      default:
        respond.apiError(res, 404, 'not_found', `no admin route ${route}`);
    }
  } catch (error) {
    if (error instanceof ZodError) {
      const detail = error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
      respond.apiError(res, 400, 'invalid_request', detail);
      return;
    }
    if (
      error instanceof RangeError ||
      error instanceof SyntaxError ||
      error instanceof UnknownLocationError
    ) {
      respond.apiError(res, 400, 'invalid_request', error.message);
      return;
    }
    throw error;
  }
}
