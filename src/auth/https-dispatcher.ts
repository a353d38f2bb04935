/**
 * The undici dispatcher for OAuth requests: TLS verification always on, trusting the system roots plus an
 * optional extra CA (PEM), e.g. the sandbox's generated certificate (`api.caFile`). There is deliberately no
 * switch to turn verification off.
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
