/**
 * The undici dispatcher for the connector's outgoing HTTPS requests other than the calls API's own transport
 * (OAuth's token endpoint, SASL/OAUTHBEARER's token endpoint, the schema registry's readiness check): TLS
 * verification always on, trusting the system roots plus an optional extra CA (PEM), e.g. the sandbox's
 * generated certificate (`api.caFile`). There is deliberately no switch to turn verification off.
 *
 * The adapters' shared leaf (docs/architecture.md, "Layers"): auth/ and kafka/ both call out over HTTPS and may
 * import it; it imports no adapter, so sharing it ties neither to the other.
 */
import { rootCertificates } from 'node:tls';
import { Agent } from 'undici';

export interface HttpsDispatcherOptions {
  /** Extra CA certificate(s), PEM, trusted in addition to the system roots. */
  extraCaPem?: string | undefined;
  connectTimeoutMs?: number;
}

export function createHttpsDispatcher(options: HttpsDispatcherOptions = {}): Agent {
  const ca = options.extraCaPem === undefined ? undefined : [...rootCertificates, options.extraCaPem];
  return new Agent({
    connect: {
      ...(ca === undefined ? {} : { ca }),
      rejectUnauthorized: true,
      timeout: options.connectTimeoutMs ?? 10_000,
    },
    connections: 4,
  });
}

/** Node's codes for a certificate that does not verify (not transient: retrying cannot help). */
const UNTRUSTED_CERTIFICATE = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** The TLS code of an error (or its causes) saying the server's certificate is not trusted; else undefined. */
export function untrustedCertificateCode(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== undefined && UNTRUSTED_CERTIFICATE.has(code)) return code;
  }
  return undefined;
}
