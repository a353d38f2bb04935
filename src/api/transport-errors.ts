/**
 * What a failed HTTP exchange of the transport (http-transport.ts) means, as a ConnectorError: RetriableError
 * API_NETWORK / API_TIMEOUT for transient faults, FatalError API_TLS when the server's certificate cannot be
 * verified (retrying cannot fix trust), FatalError API_INVALID_REQUEST when undici refuses to send the request
 * (an invalid header, such as a token with a line break). Programmer errors and RetriableErrors pass through
 * as they are. Also the reading of api.caFile (FatalError API_CA_FILE). Pure but for that file read.
 */
import { readFile } from 'node:fs/promises';
import { FatalError, isProgrammerError, RetriableError } from '../errors/index.js';

/** Error codes of Node's TLS layer meaning "this certificate is not trusted for this host". */
const TLS_TRUST_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_GET_ISSUER_CERT',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);
const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT']);
/**
 * Codes of a request that cannot be sent at all (refused before any connection), e.g. a token with a
 * line break in a header. Retrying sends the same request again, so these are fatal, not network errors.
 */
const INVALID_REQUEST_CODES = new Set([
  'UND_ERR_INVALID_ARG',
  'UND_ERR_NOT_SUPPORTED',
  'ERR_INVALID_ARG_TYPE',
  'ERR_INVALID_ARG_VALUE',
  'ERR_INVALID_CHAR',
  'ERR_INVALID_HTTP_TOKEN',
  'ERR_INVALID_URL',
]);

/** The system or undici code of an error or of one of its first causes. */
export function errorCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    const code = (current as NodeJS.ErrnoException).code;
    if (typeof code === 'string') return code;
    current = current.cause;
  }
  return undefined;
}

/** Reads `api.caFile`; a missing or unreadable file is a fatal configuration error. */
export async function readCaFile(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw new FatalError(
      'API_CA_FILE',
      `cannot read api.caFile ${path}: ${errorCode(error) ?? String(error)}`,
      { cause: error },
    );
  }
}

/** The failed exchange: its request's path, whether the transport's own deadline cut it, that deadline. */
export interface FailedExchange {
  path: string;
  timedOut: boolean;
  requestTimeoutMs: number;
}

/**
 * The error to throw for `error`, thrown by an exchange that the caller did not abort (a caller's abort
 * rejects with the signal's reason, which the transport throws itself).
 */
export function transportError(error: unknown, exchange: FailedExchange): unknown {
  if (error instanceof RetriableError) return error;
  const code = errorCode(error);
  if (exchange.timedOut || (code !== undefined && TIMEOUT_CODES.has(code))) {
    return new RetriableError(
      'API_TIMEOUT',
      `the calls API did not answer ${exchange.path} within api.requestTimeoutMs (${exchange.requestTimeoutMs} ms)`,
      { cause: error },
    );
  }
  if (code !== undefined && INVALID_REQUEST_CODES.has(code)) {
    // The undici message names the header, never its value; the value may be the token.
    return new FatalError(
      'API_INVALID_REQUEST',
      `the request to ${exchange.path} cannot be sent (${code}: ${error instanceof Error ? error.message : 'invalid'}); check the token source, api.tokenHeader and api.tokenPrefix`,
      { cause: error },
    );
  }
  // A programmer error (no system or undici code) is never retried as if it were the network's.
  if (code === undefined && isProgrammerError(error)) return error;
  if (code !== undefined && TLS_TRUST_CODES.has(code)) {
    return new FatalError(
      'API_TLS',
      `the calls API's TLS certificate could not be verified (${code}); trust its CA with api.caFile`,
      { cause: error },
    );
  }
  return new RetriableError(
    'API_NETWORK',
    `network error calling the calls API (${code ?? (error instanceof Error ? error.message : 'unknown')})`,
    { cause: error },
  );
}
