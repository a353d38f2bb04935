import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { login } from '../../../src/auth/login.js';
import { redactSecrets } from '../../../src/config/redact.js';
import { createLogger } from '../../../src/logging/logger.js';
import { testMetrics } from '../../support/metrics.js';
import { KEY_ENV, startOAuthFixture, type OAuthFixture } from '../../support/auth/oauth-fixture.js';
import { clockReading } from '../../support/clock.js';

const HOUR = 3600_000;

class MemoryStream extends Writable {
  text = '';
  override _write(chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    this.text += chunk.toString('utf8');
    done();
  }
}

describe('secrets in logs, errors, metrics and config dumps', () => {
  let fx: OAuthFixture;
  afterEach(async () => {
    await fx.close();
  });

  it('a full run (login, refreshes, rotation, revocation) logs no secret at trace level', async () => {
    fx = await startOAuthFixture();
    const stream = new MemoryStream();
    const logger = createLogger({ level: 'trace', format: 'json', destination: stream });
    const metrics = testMetrics();
    // The token manager's clock follows the sandbox's, so that advancing it expires the tokens for both.
    let now = Date.now();
    const advance = (ms: number): void => {
      fx.sandbox.admin.advanceClock(ms);
      now += ms;
    };
    const oauth = await fx.open({ logger, metrics, clock: clockReading(() => now) });
    const secrets = new Set<string>([fx.sandbox.client.clientSecret, fx.env[KEY_ENV]!]);
    const errors: unknown[] = [];

    await login({
      authorization: oauth.authorization(),
      listener: fx.listener,
      show: (url) => logger.info({ url }, 'authorization URL shown'),
      open: (url) => {
        void fx.browse(url).then(({ redirect }) => secrets.add(redirect.searchParams.get('code') ?? ''));
      },
      timeoutMs: 10_000,
    });
    const tokens = oauth.tokenProvider();
    const remember = async (): Promise<void> => {
      const record = await oauth.store.readGrant('default');
      if (record !== undefined) secrets.add(record.accessToken).add(record.refreshToken);
    };
    await remember();
    for (let i = 0; i < 2; i++) {
      const token = await tokens.accessToken();
      advance(10 * HOUR + 1000);
      await tokens.refreshAfterRejection(token);
      await remember();
    }
    fx.sandbox.admin.revokeTokens();
    advance(10 * HOUR + 1000);
    await tokens.accessToken().catch((e: unknown) => errors.push(e));
    await tokens.accessToken().catch((e: unknown) => errors.push(e));
    await oauth
      .authorization()
      .complete('some-code-value', 'UnknownState1')
      .catch((e: unknown) => errors.push(e));

    expect(errors).toHaveLength(3);
    expect(stream.text).toContain('access token refreshed');
    expect(stream.text).toContain('AUTH_GRANT_REVOKED');
    const exposed = [
      stream.text,
      ...errors.map((e) => `${String(e)} ${JSON.stringify(e)} ${(e as Error).stack ?? ''}`),
      await metrics.registry.metrics(),
      JSON.stringify(redactSecrets(fx.config)),
    ].join('\n');
    expect(secrets.size).toBeGreaterThanOrEqual(8);
    for (const secret of secrets) {
      expect(secret.length).toBeGreaterThan(8);
      expect(exposed).not.toContain(secret);
    }
  });
});
