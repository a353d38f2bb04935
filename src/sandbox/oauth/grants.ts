/**
 * The sandbox authorization server's state: authorization codes, access tokens and refresh tokens, all
 * held in memory and timed on the sandbox clock.
 *
 * - Codes are single-use, short-lived (codeTtlMs) and bound to the client and redirect_uri they were
 *   issued for. Redeeming a code twice fails and revokes the tokens the first redemption produced
 *   (RFC 6749 section 4.1.2: a replayed code means it leaked).
 * - Access tokens live accessTokenTtlMs (10 h, spec 2.2) from issue.
 * - Refresh tokens do not expire; with rotation each refresh retires the one it used.
 * Token strings are random (node:crypto), not derived from the seed: they are credentials.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export const ACCESS_TOKEN_TTL_MS = 10 * 3600_000;
export const CODE_TTL_MS = 60_000;

export interface Grant {
  clientId: string;
  scopes: string[];
  locations: string[];
}

interface CodeEntry extends Grant {
  redirectUri: string;
  /** The PKCE S256 challenge of the authorization request, or null when it had none. */
  codeChallenge: string | null;
  expiresAtMs: number;
  used: boolean;
  /** Tokens issued from this code, revoked if the code is replayed. */
  issued: { accessToken: string; refreshToken: string } | null;
}

export interface AccessTokenEntry extends Grant {
  /** The locations as a set: checked on every API request. */
  locationSet: ReadonlySet<string>;
  expiresAtMs: number;
  /** Set when the token was revoked or expired early: the reason given on 401. */
  invalidated: 'revoked' | 'expired' | null;
}

interface RefreshTokenEntry extends Grant {
  state: 'active' | 'rotated' | 'revoked';
}

export type RedeemResult =
  | { ok: true; accessToken: string; refreshToken: string }
  | { ok: false; error: 'invalid_grant'; description: string };

export type AccessCheck =
  | { ok: true; entry: AccessTokenEntry }
  | { ok: false; error: 'invalid_token' | 'token_expired'; description: string };

/** RFC 7636 S256: BASE64URL(SHA256(verifier)) equals the challenge; a verifier is 43-128 unreserved characters. */
function verifierMatches(verifier: string | null, challenge: string): boolean {
  if (verifier === null || !/^[A-Za-z0-9._~-]{43,128}$/.test(verifier)) return false;
  const digest = createHash('sha256').update(verifier, 'ascii').digest();
  const expected = Buffer.from(challenge, 'ascii');
  const actual = Buffer.from(digest.toString('base64url'), 'ascii');
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

function newToken(prefix: string): string {
  return `${prefix}${randomBytes(32).toString('base64url')}`;
}

export class GrantStore {
  private readonly codes = new Map<string, CodeEntry>();
  private readonly accessTokens = new Map<string, AccessTokenEntry>();
  private readonly refreshTokens = new Map<string, RefreshTokenEntry>();

  constructor(
    private readonly nowMs: () => number,
    private readonly settings: {
      rotateRefreshTokens: boolean;
      accessTokenTtlMs?: number;
      codeTtlMs?: number;
    },
  ) {}

  issueCode(grant: Grant, redirectUri: string, codeChallenge: string | null = null): string {
    const code = newToken('sbx_code_');
    this.codes.set(code, {
      ...grant,
      redirectUri,
      codeChallenge,
      expiresAtMs: this.nowMs() + (this.settings.codeTtlMs ?? CODE_TTL_MS),
      used: false,
      issued: null,
    });
    return code;
  }

  /** Issues a token pair for a grant (the code exchange, and the test shortcut). */
  issuePair(grant: Grant): { accessToken: string; refreshToken: string } {
    const accessToken = this.issueAccessToken(grant);
    const refreshToken = newToken('sbx_rt_');
    this.refreshTokens.set(refreshToken, { ...grant, state: 'active' });
    return { accessToken, refreshToken };
  }

  private issueAccessToken(grant: Grant): string {
    const token = newToken('sbx_at_');
    this.accessTokens.set(token, {
      clientId: grant.clientId,
      scopes: [...grant.scopes],
      locations: [...grant.locations],
      locationSet: new Set(grant.locations),
      expiresAtMs: this.nowMs() + (this.settings.accessTokenTtlMs ?? ACCESS_TOKEN_TTL_MS),
      invalidated: null,
    });
    return token;
  }

  /** `codeVerifier`: the PKCE verifier sent with the code, null when none was sent. */
  redeemCode(
    code: string,
    clientId: string,
    redirectUri: string,
    codeVerifier: string | null = null,
  ): RedeemResult {
    const entry = this.codes.get(code);
    if (entry === undefined)
      return { ok: false, error: 'invalid_grant', description: 'unknown authorization code' };
    if (entry.used) {
      if (entry.issued !== null) {
        this.revokeAccessToken(entry.issued.accessToken);
        const rt = this.refreshTokens.get(entry.issued.refreshToken);
        if (rt !== undefined) rt.state = 'revoked';
      }
      return { ok: false, error: 'invalid_grant', description: 'authorization code already used' };
    }
    if (entry.clientId !== clientId) {
      return {
        ok: false,
        error: 'invalid_grant',
        description: 'authorization code was issued to another client',
      };
    }
    if (this.nowMs() > entry.expiresAtMs) {
      entry.used = true;
      return { ok: false, error: 'invalid_grant', description: 'authorization code expired' };
    }
    if (entry.redirectUri !== redirectUri) {
      return {
        ok: false,
        error: 'invalid_grant',
        description: 'redirect_uri differs from the authorization request',
      };
    }
    if (entry.codeChallenge !== null && !verifierMatches(codeVerifier, entry.codeChallenge)) {
      entry.used = true;
      return {
        ok: false,
        error: 'invalid_grant',
        description:
          codeVerifier === null ? 'code_verifier is required (PKCE)' : 'code_verifier does not match (PKCE)',
      };
    }
    entry.used = true;
    const pair = this.issuePair(entry);
    entry.issued = pair;
    return { ok: true, ...pair };
  }

  refresh(refreshToken: string, clientId: string): RedeemResult {
    const entry = this.refreshTokens.get(refreshToken);
    if (entry === undefined)
      return { ok: false, error: 'invalid_grant', description: 'unknown refresh token' };
    if (entry.clientId !== clientId) {
      return { ok: false, error: 'invalid_grant', description: 'refresh token was issued to another client' };
    }
    if (entry.state === 'revoked')
      return { ok: false, error: 'invalid_grant', description: 'refresh token revoked' };
    if (entry.state === 'rotated') {
      return {
        ok: false,
        error: 'invalid_grant',
        description: 'refresh token already used (rotation is on)',
      };
    }
    const accessToken = this.issueAccessToken(entry);
    if (!this.settings.rotateRefreshTokens) return { ok: true, accessToken, refreshToken };
    entry.state = 'rotated';
    const next = newToken('sbx_rt_');
    this.refreshTokens.set(next, {
      clientId: entry.clientId,
      scopes: entry.scopes,
      locations: entry.locations,
      state: 'active',
    });
    return { ok: true, accessToken, refreshToken: next };
  }

  checkAccessToken(token: string): AccessCheck {
    const entry = this.accessTokens.get(token);
    if (entry === undefined)
      return { ok: false, error: 'invalid_token', description: 'unknown access token' };
    if (entry.invalidated === 'revoked')
      return { ok: false, error: 'invalid_token', description: 'access token revoked' };
    if (entry.invalidated === 'expired' || this.nowMs() >= entry.expiresAtMs) {
      return { ok: false, error: 'token_expired', description: 'access token expired' };
    }
    return { ok: true, entry };
  }

  /** Fault: the token expires now, before its 10 h. */
  expireAccessToken(token: string): void {
    const entry = this.accessTokens.get(token);
    if (entry !== undefined && entry.invalidated === null) entry.invalidated = 'expired';
  }

  revokeAccessToken(token: string): void {
    const entry = this.accessTokens.get(token);
    if (entry !== undefined) entry.invalidated = 'revoked';
  }

  /** Fault / admin: the refresh token stops working. */
  revokeRefreshToken(token: string): void {
    const entry = this.refreshTokens.get(token);
    if (entry !== undefined) entry.state = 'revoked';
  }

  revokeAll(opts: { accessTokens?: boolean; refreshTokens?: boolean }): {
    accessTokens: number;
    refreshTokens: number;
  } {
    let access = 0;
    let refresh = 0;
    if (opts.accessTokens ?? true) {
      for (const entry of this.accessTokens.values()) {
        if (entry.invalidated !== 'revoked') access++;
        entry.invalidated = 'revoked';
      }
    }
    if (opts.refreshTokens ?? true) {
      for (const entry of this.refreshTokens.values()) {
        if (entry.state === 'active') refresh++;
        entry.state = 'revoked';
      }
    }
    return { accessTokens: access, refreshTokens: refresh };
  }
}
