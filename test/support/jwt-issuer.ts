/**
 * A small OAuth 2.0 identity provider on loopback for the SASL/OAUTHBEARER tests: a client credentials token
 * endpoint (HTTP Basic client authentication, form body, as RFC 6749 4.4 and Kafka's own login handler use it)
 * issuing RS256 JWTs, and the JWKS a broker's OAuthBearerValidatorCallbackHandler verifies them with.
 * Real signatures (node:crypto), real HTTP: the broker fetches the JWKS over the network like any other.
 */
import { createPrivateKey, generateKeyPairSync, randomUUID, sign, type KeyObject } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface JwtIssuerOptions {
  clientId: string;
  clientSecret: string;
  audience: string;
  /** Lifetime of the tokens issued, in seconds. */
  lifetimeSeconds?: number;
}

export interface JwtIssuer {
  /** http://127.0.0.1:port: the `iss` claim. */
  issuer: string;
  tokenUrl: string;
  jwksUrl: string;
  /** Tokens issued so far. */
  issued(): number;
  /** Times the JWKS was fetched (by a validating broker). */
  jwksFetches(): number;
  /** The form parameters of the last token request. */
  lastRequest(): URLSearchParams | null;
  close(): Promise<void>;
}

const KEY_ID = 'test-key-1';

function base64url(value: object): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

function signJwt(privateKey: KeyObject, claims: object): string {
  const input = `${base64url({ alg: 'RS256', typ: 'JWT', kid: KEY_ID })}.${base64url(claims)}`;
  return `${input}.${sign('sha256', Buffer.from(input), privateKey).toString('base64url')}`;
}

function send(res: ServerResponse, status: number, body: object): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

async function formOf(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

/** The client id and secret of an `Authorization: Basic` header (form-decoded, RFC 6749 2.3.1). */
function basicCredentials(header: string | undefined): [string, string] | null {
  const match = /^Basic\s+(\S+)$/i.exec(header ?? '');
  if (match?.[1] === undefined) return null;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  const decode = (part: string) => decodeURIComponent(part.replace(/\+/g, ' '));
  return [decode(decoded.slice(0, colon)), decode(decoded.slice(colon + 1))];
}

export async function startJwtIssuer(options: JwtIssuerOptions): Promise<JwtIssuer> {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const signingKey = createPrivateKey(privateKey.export({ format: 'pem', type: 'pkcs8' }));
  const jwk = { ...publicKey.export({ format: 'jwk' }), kid: KEY_ID, alg: 'RS256', use: 'sig' };
  let issued = 0;
  let jwksFetches = 0;
  let last: URLSearchParams | null = null;
  let issuer = '';

  const server: Server = createServer((req, res) => {
    void (async () => {
      if (req.method === 'GET' && req.url === '/jwks') {
        jwksFetches++;
        return send(res, 200, { keys: [jwk] });
      }
      if (req.method !== 'POST' || req.url !== '/token') return send(res, 404, { error: 'not_found' });
      const form = await formOf(req);
      last = form;
      if (form.get('grant_type') !== 'client_credentials')
        return send(res, 400, { error: 'unsupported_grant_type' });
      const credentials = basicCredentials(req.headers.authorization);
      if (credentials?.[0] !== options.clientId || credentials[1] !== options.clientSecret)
        return send(res, 401, { error: 'invalid_client', error_description: 'client authentication failed' });
      const now = Math.floor(Date.now() / 1000);
      const lifetime = options.lifetimeSeconds ?? 3600;
      issued++;
      send(res, 200, {
        access_token: signJwt(signingKey, {
          iss: issuer,
          sub: options.clientId,
          aud: options.audience,
          iat: now,
          nbf: now,
          exp: now + lifetime,
          jti: randomUUID(),
          scope: form.get('scope') ?? 'kafka',
        }),
        token_type: 'Bearer',
        expires_in: lifetime,
      });
    })().catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer,
    tokenUrl: `${issuer}/token`,
    jwksUrl: `${issuer}/jwks`,
    issued: () => issued,
    jwksFetches: () => jwksFetches,
    lastRequest: () => last,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
