import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../../src/errors/exit-codes.js';
import { reportError } from '../../../src/cli/error-report.js';
import { FatalError, RetriableError } from '../../../src/errors/index.js';

describe('reportError', () => {
  it('exits 2 for an error that means the configuration is wrong, as the README promises', () => {
    const report = reportError(
      new FatalError('AUTH_STORE_KEY_MISSING', 'set the environment variable CALLS_CONNECTOR_TOKEN_KEY'),
    );
    expect(report.exitCode).toBe(ExitCode.USAGE);
    expect(report.text).toBe(
      'calls-connector: [AUTH_STORE_KEY_MISSING] set the environment variable CALLS_CONNECTOR_TOKEN_KEY',
    );
  });

  it('exits 1 for a runtime failure and adds what to do when the message only says what failed', () => {
    const report = reportError(
      new RetriableError('KAFKA_UNAVAILABLE', 'cannot check or create the topics: connect ECONNREFUSED'),
    );
    expect(report.exitCode).toBe(ExitCode.FAILURE);
    expect(report.text).toMatch(/\n {2}what to do: check kafka\.brokers/);
  });

  it('exits 130 when Ctrl-C interrupted `auth login`, as the README says for an interrupted command', () => {
    const report = reportError(new FatalError('AUTH_LOGIN_ABORTED', 'the login was interrupted'));
    expect(report.exitCode).toBe(ExitCode.INTERRUPTED);
  });

  it('says what to do when auth login cannot listen for the redirect', () => {
    const report = reportError(
      new FatalError(
        'AUTH_CALLBACK_LISTEN_FAILED',
        'cannot listen on 127.0.0.1:8976 for the OAuth redirect (EADDRINUSE)',
      ),
    );
    expect(report.text).toContain("what to do: free the redirect_uri's port");
    expect(report.text).toContain('--listen HOST:PORT');
  });

  it('says how to recover from a damaged token store', () => {
    const report = reportError(
      new FatalError(
        'AUTH_STORE_CORRUPT',
        'the token store /var/lib/t.enc is not a token-store file (invalid JSON)',
      ),
    );
    expect(report.exitCode).toBe(ExitCode.FAILURE);
    expect(report.text).toContain('what to do: the token store is damaged');
    expect(report.text).toContain('run `calls-connector auth login` again');
  });

  it('exits 2 and says what to check when a file a config key names cannot be read', () => {
    const report = reportError(
      new FatalError('CONFIG_FILE_UNREADABLE', 'cannot read oauth.clientSecretFile (/nope/secret): ENOENT'),
    );
    expect(report.exitCode).toBe(ExitCode.USAGE);
    expect(report.text).toContain(
      "what to do: check the path in that key and that the connector's user can read",
    );
  });

  it('never prints URL userinfo or a bearer token that a message carries', () => {
    const report = reportError(
      new FatalError('API_TLS', 'POST https://user:pw-secret-1@host/x with Bearer abcdefghijkl123 failed'),
    );
    expect(report.text).not.toContain('pw-secret-1');
    expect(report.text).not.toContain('abcdefghijkl123');
  });
});
