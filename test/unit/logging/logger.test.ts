import { describe, expect, it } from 'vitest';
import { FatalError } from '../../../src/errors/index.js';
import { isErrorCodeShaped } from '../../../src/logging/logger.js';
import { capturingLogger } from '../../support/logger.js';

describe('createLogger', () => {
  it('keeps error codes in log lines so operators can search by them', () => {
    const { logger, text } = capturingLogger();
    const error = new FatalError('AUTH_GRANT_REVOKED', 'run auth login again');
    logger.error({ code: error.code, err: error }, 'location stopped');
    const line = JSON.parse(text()) as { code: string; err: { code: string } };
    expect(line.code).toBe('AUTH_GRANT_REVOKED');
    expect(line.err.code).toBe('AUTH_GRANT_REVOKED');
  });

  it('still redacts an OAuth authorization code logged under `code`', () => {
    const { logger, text } = capturingLogger();
    logger.info({ redirect: { code: 'Sx8f2kQp0aZr71LmNvB3', state: 'abc' } }, 'redirect received');
    expect(text()).not.toContain('Sx8f2kQp0aZr71LmNvB3');
    expect(text()).toContain('[redacted]');
  });

  it('scrubs credentials that a cause chain carries into the serialized error', () => {
    const { logger, text } = capturingLogger();
    const cause = new Error(
      'request to http://svc:registry-pass-123@registry:8081/subjects failed; sent Authorization: Bearer tok-abcdef123456',
    );
    logger.error({ err: new FatalError('SCHEMA_REGISTRY_REFUSED', 'refused', { cause }) }, 'start failed');
    expect(text()).toContain('SCHEMA_REGISTRY_REFUSED');
    expect(text()).not.toContain('registry-pass-123');
    expect(text()).not.toContain('tok-abcdef123456');
  });
});

describe('isErrorCodeShaped', () => {
  it('accepts connector, Node and kafkajs codes and refuses random tokens', () => {
    for (const code of [
      'AUTH_GRANT_REVOKED',
      'CURSOR_LOOP',
      'ECONNREFUSED',
      'UND_ERR_CONNECT_TIMEOUT',
      'INTERNAL',
    ])
      expect(isErrorCodeShaped(code)).toBe(true);
    for (const value of ['Sx8f2kQp0aZr71LmNvB3', 'ABCDEFGHIJKLMNOPQRSTUVWX', 'abc', 42])
      expect(isErrorCodeShaped(value)).toBe(false);
  });
});
