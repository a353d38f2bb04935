/**
 * The calls endpoints: GET /v4/calls (the listing, spec 4.3) and GET /v4/calls/{uid} (spec 4.4).
 *
 * Both need `Authorization: Bearer <token>` with scope read_phones, and the call's location among the
 * token's. Errors: `{"error":{"code","message"}}` - 401 invalid_token / token_expired (with
 * WWW-Authenticate), 403 insufficient_scope / location_forbidden, 400 invalid_request / invalid_cursor,
 * 410 cursor_expired, 404 not_found. Faults (faults.ts) may replace the cursor refusals by a canned answer,
 * refuse valid cursors, fail single-call requests of chosen calls, or report another updatedAt for them.
 *
 * Listing body: `{"data":[items], "metadata":{"nextCursor": string|null}}`. nextCursor is null exactly
 * when no listable record follows the page (so the last page already says "done"). limit=0 returns no
 * items and, when records remain, a cursor at the same position (a no-op step), else null.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SandboxContext } from '../context.js';
import { listedCallJson, toSingleCall } from '../data/call-record.js';
import type { LocationIndex } from '../data/location-index.js';
import { answerSpentQuota, bodyFaults, enterFaultGate } from '../faults/gate.js';
import { planSingleCallFault, type FaultPlan } from '../faults/faults.js';
import type { AccessTokenEntry } from '../oauth/grants.js';
import { decodeCursor, encodeCursor, type CursorPayload } from '../listing/cursor.js';
import { readPage } from '../listing/page.js';
import { parseListingParams } from '../listing/params.js';

export const REQUIRED_SCOPE = 'read_phones';

/** Checks the bearer token (and the early-expiry fault); answers 401/403 itself and returns null then. */
function authenticate(
  ctx: SandboxContext,
  req: IncomingMessage,
  res: ServerResponse,
  plan: FaultPlan,
): AccessTokenEntry | null {
  const header = req.headers.authorization ?? '';
  // The scheme is case-insensitive (RFC 7235); the token is a b64token (RFC 6750).
  const match = /^Bearer +([A-Za-z0-9._~+/=-]+)$/i.exec(header);
  const challenge = (error: string, description: string): Record<string, string> => ({
    'www-authenticate': `Bearer realm="sandbox", error="${error}", error_description="${description}"`,
  });
  if (match === null) {
    ctx.respond.apiError(
      res,
      401,
      'invalid_token',
      'missing or malformed bearer token',
      challenge('invalid_token', 'missing token'),
    );
    return null;
  }
  const token = match[1] as string;
  let check = ctx.grants.checkAccessToken(token);
  if (check.ok && plan.expireToken) {
    ctx.stats.faults.tokensExpiredEarly++;
    ctx.grants.expireAccessToken(token);
    check = ctx.grants.checkAccessToken(token);
  }
  if (!check.ok) {
    ctx.respond.apiError(
      res,
      401,
      check.error,
      check.description,
      challenge('invalid_token', check.description),
    );
    return null;
  }
  if (!check.entry.scopes.includes(REQUIRED_SCOPE)) {
    ctx.respond.apiError(res, 403, 'insufficient_scope', `this endpoint requires scope ${REQUIRED_SCOPE}`, {
      'www-authenticate': `Bearer realm="sandbox", error="insufficient_scope", scope="${REQUIRED_SCOPE}"`,
    });
    return null;
  }
  return check.entry;
}

export async function handleListCalls(
  ctx: SandboxContext,
  req: IncomingMessage,
  res: ServerResponse,
  query: URLSearchParams,
): Promise<void> {
  ctx.stats.listRequests++;
  const plan = await enterFaultGate(ctx, res, req);
  if (plan === null) return;
  const token = authenticate(ctx, req, res, plan);
  if (token === null) return;
  const parsed = parseListingParams(query);
  if (!parsed.ok) {
    ctx.respond.apiError(res, 400, 'invalid_request', parsed.message);
    return;
  }
  const { params } = parsed;
  const nowMs = ctx.clock.nowMs();
  let listing: CursorPayload;
  if (params.cursor !== null) {
    const decoded = decodeCursor(params.cursor, ctx.cursorKey, nowMs);
    // Refused: expired, not issued here, or drawn by faults.cursorRejectionRate.
    if (!decoded.ok || plan.rejectCursor) {
      if (decoded.ok) ctx.stats.faults.cursorsRejected++;
      if (ctx.faults.cursorRejection !== null) ctx.respond.canned(res, ctx.faults.cursorRejection);
      else if (!decoded.ok && decoded.reason !== 'expired')
        ctx.respond.apiError(res, 400, 'invalid_cursor', 'the cursor is not one this server issued');
      else
        ctx.respond.apiError(res, 410, 'cursor_expired', 'the cursor has expired; start the listing again');
      return;
    }
    listing = decoded.payload;
  } else {
    listing = {
      locationUid: params.locationUid,
      sinceMs: params.sinceMs,
      order: params.order,
      expiresAtMs: 0,
    };
  }
  let locations: string[];
  if (listing.locationUid !== null) {
    if (!token.locationSet.has(listing.locationUid)) {
      ctx.respond.apiError(res, 403, 'location_forbidden', 'the token does not give access to this location');
      return;
    }
    if (answerSpentQuota(ctx, res, listing.locationUid)) return;
    locations = [listing.locationUid];
  } else {
    locations = token.locations;
  }
  const indexes = locations.map((l) => ctx.store.index(l)).filter((i): i is LocationIndex => i !== undefined);
  const page = readPage({
    indexes,
    sinceMs: listing.sinceMs,
    order: listing.order,
    limit: params.limit,
    ...(listing.after === undefined ? {} : { after: listing.after }),
    ...(listing.offset === undefined ? {} : { offset: listing.offset }),
  });
  const items = page.passed.filter((r) => r.representable).map(listedCallJson);
  const nextCursor = page.more
    ? encodeCursor(
        {
          locationUid: listing.locationUid,
          sinceMs: listing.sinceMs,
          order: listing.order,
          ...page.next,
          expiresAtMs: nowMs + ctx.faults.cursorTtlMs,
        },
        ctx.cursorKey,
      )
    : null;
  const body = `{"data":[${items.join(',')}],"metadata":{"nextCursor":${JSON.stringify(nextCursor)}}}`;
  ctx.respond.jsonText(res, 200, body, {}, bodyFaults(ctx, plan));
}

export async function handleGetCall(
  ctx: SandboxContext,
  req: IncomingMessage,
  res: ServerResponse,
  uid: string,
): Promise<void> {
  ctx.stats.getRequests++;
  const plan = await enterFaultGate(ctx, res, req);
  if (plan === null) return;
  const token = authenticate(ctx, req, res, plan);
  if (token === null) return;
  const record = ctx.store.get(uid);
  if (record === undefined) {
    ctx.respond.apiError(res, 404, 'not_found', 'no call with this uid');
    return;
  }
  if (!token.locationSet.has(record.locationUid)) {
    ctx.respond.apiError(
      res,
      403,
      'location_forbidden',
      "the token does not give access to this call's location",
    );
    return;
  }
  if (answerSpentQuota(ctx, res, record.locationUid)) return;
  const attempt = ctx.singleCallAttempts.get(uid) ?? 0;
  ctx.singleCallAttempts.set(uid, attempt + 1);
  const fault = planSingleCallFault(ctx.faults, uid, attempt);
  if (fault?.kind === 'answer') {
    ctx.stats.faults.singleCallFailures++;
    ctx.respond.canned(res, fault.answer);
    return;
  }
  const call = toSingleCall(record);
  if (fault?.kind === 'version-skew') {
    ctx.stats.faults.versionSkews++;
    call.updatedAt = new Date(record.updatedAtMs + 1000).toISOString();
  }
  ctx.respond.json(res, 200, { data: call }, {}, bodyFaults(ctx, plan));
}
