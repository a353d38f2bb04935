import { describe, expect, it } from 'vitest';
import { errorCode, transportError } from '../../../src/api/transport-errors.js';
import { FatalError, RetriableError } from '../../../src/errors/index.js';

const exchange = { path: '/v4/calls', timedOut: false, requestTimeoutMs: 1_000 };

/** An error with a system or undici code, as Node and undici throw them. */
function coded(code: string, message = `failed: ${code}`): Error {
  return Object.assign(new Error(message), { code });
}

describe('errorCode', () => {
  it('reads the code of the error itself or of one of its causes', () => {
    expect(errorCode(coded('ECONNRESET'))).toBe('ECONNRESET');
    expect(errorCode(new Error('fetch failed', { cause: coded('ECONNREFUSED') }))).toBe('ECONNREFUSED');
  });

  it('answers undefined for an error without a code, or something that is no error', () => {
    expect(errorCode(new Error('plain'))).toBeUndefined();
    expect(errorCode('ECONNRESET')).toBeUndefined();
  });
});

describe('transportError', () => {
  it('is a retriable API_TIMEOUT, naming path and deadline, when the transport cut the exchange', () => {
    const error = transportError(new DOMException('timed out', 'TimeoutError'), {
      ...exchange,
      timedOut: true,
    });
    expect(error).toBeInstanceOf(RetriableError);
    expect(error).toMatchObject({
      code: 'API_TIMEOUT',
      message: 'the calls API did not answer /v4/calls within api.requestTimeoutMs (1000 ms)',
    });
  });

  it("is a retriable API_TIMEOUT for undici's own header, body and connect timeouts", () => {
    for (const code of ['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT'])
      expect(transportError(coded(code), exchange)).toMatchObject({ code: 'API_TIMEOUT', retriable: true });
  });

  it('is a fatal API_INVALID_REQUEST when undici refuses to send the request', () => {
    const error = transportError(
      coded('ERR_INVALID_CHAR', 'Invalid character in header content ["authorization"]'),
      exchange,
    );
    expect(error).toBeInstanceOf(FatalError);
    expect(error).toMatchObject({ code: 'API_INVALID_REQUEST' });
    expect((error as Error).message).toContain('the request to /v4/calls cannot be sent (ERR_INVALID_CHAR');
  });

  it('is a fatal API_TLS when the certificate cannot be verified, found in the cause', () => {
    const error = transportError(
      new Error('fetch failed', { cause: coded('SELF_SIGNED_CERT_IN_CHAIN') }),
      exchange,
    );
    expect(error).toBeInstanceOf(FatalError);
    expect(error).toMatchObject({
      code: 'API_TLS',
      message:
        "the calls API's TLS certificate could not be verified (SELF_SIGNED_CERT_IN_CHAIN); trust its CA with api.caFile",
    });
  });

  it('is a retriable API_NETWORK for any other fault, keeping it as the cause', () => {
    const cause = coded('ECONNRESET');
    const error = transportError(cause, exchange);
    expect(error).toBeInstanceOf(RetriableError);
    expect(error).toMatchObject({
      code: 'API_NETWORK',
      message: 'network error calling the calls API (ECONNRESET)',
      cause,
    });
    expect(transportError(new Error('socket hang up'), exchange)).toMatchObject({
      code: 'API_NETWORK',
      message: 'network error calling the calls API (socket hang up)',
    });
  });

  it('passes a programmer error and a RetriableError through as they are', () => {
    const bug = new TypeError('undefined is not a function');
    const tooLarge = new RetriableError('API_RESPONSE_TOO_LARGE', 'too large');
    expect(transportError(bug, exchange)).toBe(bug);
    expect(transportError(tooLarge, exchange)).toBe(tooLarge);
  });
});
