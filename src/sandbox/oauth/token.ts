/**
 * POST /oauth/token (spec 4.2, 5 steps 4 and 6): JSON body only, both grant types.
 *
 * Errors follow RFC 6749 5.2: 400 invalid_request / invalid_grant / unsupported_grant_type,
 * 401 invalid_client (unknown client or wrong secret; the secret is compared in constant time),
 * 415 invalid_request for any body that is not application/json. The response holds exactly the two
 * fields the spec names, access_token and refresh_token (no expires_in: clients must know the 10 h).
 */
import { timingSafeEqual, createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SandboxContext } from '../context.js';
import { planFaults } from '../faults/faults.js';
import { bodyFaults, enterFaultGate, NO_FAULTS } from '../faults/gate.js';
import { BodyTooLargeError, mediaType, readBody } from '../http/respond.js';

function sameSecret(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb);
}

function str(body: Record<string, unknown>, name: string): string | null {
  const v = body[name];
  return typeof v === 'string' && v !== '' ? v : null;
}

export async function handleToken(
  ctx: SandboxContext,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  ctx.stats.tokenRequests++;
  // Refresh-token revocation is this endpoint's own fault: drawn even when the others stay off here.
  const plan = ctx.faults.includeTokenEndpoint
    ? await enterFaultGate(ctx, res)
    : { ...NO_FAULTS, revokeRefreshToken: planFaults(ctx.faults, ctx.faultSeq++).revokeRefreshToken };
  if (plan === null) return;
  const { respond } = ctx;
  if (mediaType(req) !== 'application/json') {
    respond.oauthError(res, 415, 'invalid_request', 'Content-Type must be application/json');
    return;
  }
  let body: unknown;
  try {
    body = JSON.parse(await readBody(req));
  } catch (error) {
    if (error instanceof BodyTooLargeError) {
      respond.oauthError(res, 413, 'invalid_request', 'body too large');
      return;
    }
    respond.oauthError(res, 400, 'invalid_request', 'body is not valid JSON');
    return;
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    respond.oauthError(res, 400, 'invalid_request', 'body must be a JSON object');
    return;
  }
  const fields = body as Record<string, unknown>;
  const grantType = str(fields, 'grant_type');
  if (grantType === null) {
    respond.oauthError(res, 400, 'invalid_request', 'grant_type is required');
    return;
  }
  if (grantType !== 'authorization_code' && grantType !== 'refresh_token') {
    respond.oauthError(
      res,
      400,
      'unsupported_grant_type',
      'grant_type must be authorization_code or refresh_token',
    );
    return;
  }
  const clientId = str(fields, 'client_id');
  const clientSecret = str(fields, 'client_secret');
  if (
    clientId === null ||
    clientSecret === null ||
    clientId !== ctx.client.clientId ||
    !sameSecret(clientSecret, ctx.client.clientSecret)
  ) {
    respond.oauthError(res, 401, 'invalid_client', 'client authentication failed', {
      'www-authenticate': 'Basic realm="sandbox"',
    });
    return;
  }
  let result;
  if (grantType === 'authorization_code') {
    const code = str(fields, 'code');
    const redirectUri = str(fields, 'redirect_uri');
    if (code === null || redirectUri === null) {
      respond.oauthError(res, 400, 'invalid_request', 'code and redirect_uri are required');
      return;
    }
    result = ctx.grants.redeemCode(code, clientId, redirectUri, str(fields, 'code_verifier'));
  } else {
    const refreshToken = str(fields, 'refresh_token');
    if (refreshToken === null) {
      respond.oauthError(res, 400, 'invalid_request', 'refresh_token is required');
      return;
    }
    if (plan.revokeRefreshToken) {
      ctx.stats.faults.refreshTokensRevoked++;
      ctx.grants.revokeRefreshToken(refreshToken);
    }
    result = ctx.grants.refresh(refreshToken, clientId);
  }
  if (!result.ok) {
    respond.oauthError(res, 400, result.error, result.description);
    return;
  }
  respond.json(
    res,
    200,
    { access_token: result.accessToken, refresh_token: result.refreshToken },
    { pragma: 'no-cache' },
    bodyFaults(ctx, ctx.faults.includeTokenEndpoint ? plan : null),
  );
}
