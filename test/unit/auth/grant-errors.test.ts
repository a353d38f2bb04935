import { describe, expect, it } from 'vitest';
import {
  grantRevoked,
  noGrantStored,
  refreshRefused,
  rejectedAfterRefresh,
  revokedGrantMessage,
  storeWriteFailed,
} from '../../../src/auth/grant-errors.js';
import { TokenRequestRefused } from '../../../src/auth/token-endpoint.js';
import { FatalError, RetriableError } from '../../../src/errors/index.js';

const refused = new TokenRequestRefused('AUTH_INVALID_GRANT', 'refused', 400, 'invalid_grant');

describe('the errors of a grant', () => {
  it('tells the person to run auth login for a revoked grant, with --grant for any grant but the default', () => {
    expect(revokedGrantMessage('default')).toContain('run `calls-connector auth login` again');
    expect(revokedGrantMessage('eu')).toContain('run `calls-connector auth login --grant eu` again');
    const error = grantRevoked('eu', refused);
    expect(error).toBeInstanceOf(FatalError);
    expect([error.code, error.cause, error.details]).toEqual([
      'AUTH_GRANT_REVOKED',
      refused,
      { grant: 'eu', status: 400 },
    ]);
  });

  it('names each failure by what happens next: fatal until auth login, retriable while the manager tries again', () => {
    const fatal = [noGrantStored('g', 'the file store')];
    const retriable = [
      storeWriteFailed('g', 'the file store', new Error('disk full')),
      refreshRefused('g', Date.parse('2026-01-01T10:00:00Z'), refused),
      rejectedAfterRefresh('g', 5_000),
    ];
    expect(fatal.map((e) => [e instanceof FatalError, e.code])).toEqual([[true, 'AUTH_NO_GRANT']]);
    expect(retriable.map((e) => [e instanceof RetriableError, e.code])).toEqual([
      [true, 'AUTH_STORE_WRITE_FAILED'],
      [true, 'AUTH_REFRESH_REFUSED'],
      [true, 'AUTH_TOKEN_REJECTED_AFTER_REFRESH'],
    ]);
    expect(retriable[1]?.message).toContain('used until 2026-01-01T10:00:00.000Z');
    expect(retriable[2]?.message).toContain('refreshing again in 5000 ms');
  });
});
