import { describe, expect, it } from 'vitest';
import { untrustedCertificateCode } from '../../../src/https/dispatcher.js';

const withCode = (message: string, code: string, cause?: unknown): Error =>
  Object.assign(new Error(message, cause === undefined ? {} : { cause }), { code });

describe('untrustedCertificateCode', () => {
  it("names the TLS code of a certificate that does not verify, found in the error's causes", () => {
    const tls = withCode('self-signed certificate', 'DEPTH_ZERO_SELF_SIGNED_CERT');
    expect(untrustedCertificateCode(new Error('fetch failed', { cause: tls }))).toBe(
      'DEPTH_ZERO_SELF_SIGNED_CERT',
    );
    expect(untrustedCertificateCode(withCode('altname', 'ERR_TLS_CERT_ALTNAME_INVALID'))).toBe(
      'ERR_TLS_CERT_ALTNAME_INVALID',
    );
  });

  it('gives undefined for a transient network failure and for what is not an error', () => {
    expect(
      untrustedCertificateCode(new Error('fetch failed', { cause: withCode('reset', 'ECONNRESET') })),
    ).toBe(undefined);
    expect(untrustedCertificateCode('CERT_HAS_EXPIRED')).toBeUndefined();
  });
});
