/**
 * Self-signed TLS certificates for loopback servers of our own (the sandbox, the `auth login` redirect listener).
 *
 * ECDSA P-256 (fast to make, unlike RSA), made with `selfsigned` (Node's WebCrypto through @peculiar/x509):
 * Node has no X.509 writer of its own, and shelling out to openssl would make it a runtime dependency.
 */
import { generate, type CertificateExtension, type SubjectAltNameEntry } from 'selfsigned';

export interface SelfSignedOptions {
  commonName: string;
  /** DNS names and IP addresses the certificate is valid for (subjectAltName). */
  hosts: readonly string[];
  validityMs: number;
  /** Mark it as a CA, so that clients can trust it directly as their CA file. */
  ca?: boolean;
}

export interface CertificatePair {
  cert: string;
  key: string;
}

const isIpAddress = (host: string) => /^[\d.]+$/.test(host) || host.includes(':');

export async function generateSelfSigned(options: SelfSignedOptions): Promise<CertificatePair> {
  const now = Date.now();
  const altNames: SubjectAltNameEntry[] = options.hosts.map((host) => {
    const name = host.replace(/^\[|\]$/g, '');
    return isIpAddress(name) ? { type: 7, ip: name } : { type: 2, value: name };
  });
  const extensions: CertificateExtension[] = [
    ...(options.ca
      ? ([
          { name: 'basicConstraints', cA: true, critical: true },
          { name: 'keyUsage', digitalSignature: true, keyCertSign: true, critical: true },
        ] as const)
      : []),
    { name: 'extKeyUsage', serverAuth: true },
    { name: 'subjectAltName', altNames },
  ];
  const pems = await generate([{ name: 'commonName', value: options.commonName }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    // A little slack before now for clocks that disagree slightly.
    notBeforeDate: new Date(now - 60_000),
    notAfterDate: new Date(now + options.validityMs),
    extensions,
  });
  return { cert: pems.cert, key: pems.private };
}
