import { describe, expect, it } from 'vitest';
import { grantRecordFromResponse } from '../../../src/auth/grant-record.js';
import { codeOf } from '../../../src/errors/index.js';
import { thrown } from '../../support/auth/thrown.js';

const HOUR = 3600_000;
const previous = { grant: 'g', clientId: 'c', scopes: ['read_phones'], refreshToken: 'rt-0' };

describe('grantRecordFromResponse', () => {
  it('dates the expiry from when the request was sent, capped at the configured lifetime', () => {
    const response = { accessToken: 'at-1', refreshToken: 'rt-1', expiresInSeconds: 3600, scope: 'a b' };
    expect(grantRecordFromResponse(previous, response, 1_000, 10 * HOUR)).toEqual({
      grant: 'g',
      clientId: 'c',
      accessToken: 'at-1',
      refreshToken: 'rt-1',
      accessTokenExpiresAt: 1_000 + HOUR,
      obtainedAt: 1_000,
      scopes: ['a', 'b'],
    });
    const longer = { ...response, expiresInSeconds: 20 * 3600 };
    expect(grantRecordFromResponse(previous, longer, 0, 10 * HOUR).accessTokenExpiresAt).toBe(10 * HOUR);
  });

  it('keeps the refresh token and scopes the response leaves out, and assumes the lifetime without expires_in', () => {
    const response = {
      accessToken: 'at-1',
      refreshToken: undefined,
      expiresInSeconds: undefined,
      scope: undefined,
    };
    const next = grantRecordFromResponse(previous, response, 0, 10 * HOUR);
    expect([next.refreshToken, next.scopes, next.accessTokenExpiresAt]).toEqual([
      'rt-0',
      ['read_phones'],
      10 * HOUR,
    ]);
  });

  it('refuses a response without a refresh token when there was none before (the grant could not be kept alive)', () => {
    const response = {
      accessToken: 'at-1',
      refreshToken: undefined,
      expiresInSeconds: undefined,
      scope: undefined,
    };
    const { refreshToken: _, ...withoutRefreshToken } = previous;
    expect(codeOf(thrown(() => grantRecordFromResponse(withoutRefreshToken, response, 0, HOUR)))).toBe(
      'AUTH_TOKEN_RESPONSE_INVALID',
    );
  });
});
