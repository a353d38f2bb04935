/**
 * ClientCredentialsTokens against a real HTTP token endpoint on loopback whose answers each test sets: the
 * request it sends, caching and refresh at 80 % of the lifetime, one request for concurrent callers, the cached
 * token kept through a passing failure, and every failure named by what happens next without the secret.
 */
import { chmod, mkdtemp, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ConnectorError, FatalError, RetriableError } from '../../../../src/errors/index.js';
import { ClientCredentialsTokens, lifetimeOf } from '../../../../src/kafka/client/oauthbearer.js';
import { clockReading } from '../../../support/clock.js';
import { rejectionOf } from '../../../support/rejection.js';

const SECRET = 'sekrit value+/=';

interface Seen {
  authorization: string | undefined;
  contentType: string | undefined;
  form: URLSearchParams;
}

let server: Server;
let url: string;
const dispatcher = new Agent();
let answer: () => { status: number; body: unknown };
const seen: Seen[] = [];

async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

beforeAll(async () => {
  server = createServer((req, res) => {
    void bodyOf(req).then((text) => {
      seen.push({
        authorization: req.headers.authorization,
        contentType: req.headers['content-type'],
        form: new URLSearchParams(text),
      });
      const { status, body } = answer();
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/oauth2/token`;
});

afterEach(() => {
  seen.length = 0;
});

afterAll(async () => {
  await dispatcher.close();
  await new Promise((resolve) => server.close(resolve));
});

function tokens(
  now: { at: number },
  settings: Partial<ConstructorParameters<typeof ClientCredentialsTokens>[0]> = {},
) {
  return new ClientCredentialsTokens(
    {
      tokenEndpointUrl: url,
      clientId: 'connector id',
      clientSecret: SECRET,
      requestTimeoutMs: 5_000,
      ...settings,
    },
    dispatcher,
    clockReading(() => now.at),
  );
}

let issued = 0;
const grant =
  (expiresIn = 100) =>
  () => ({
    status: 200,
    body: { access_token: `token-${++issued}`, token_type: 'Bearer', expires_in: expiresIn },
  });

describe('ClientCredentialsTokens', () => {
  it('asks with the client credentials grant, the client in HTTP Basic (form-encoded), and the scope', async () => {
    answer = grant();
    const token = await tokens(
      { at: 0 },
      { scope: 'kafka:write kafka:read', extensions: { logicalCluster: 'lkc-1' } },
    ).provide();

    const [request] = seen;
    const basic = Buffer.from(request?.authorization?.replace(/^Basic /, '') ?? '', 'base64').toString();
    expect(basic).toBe(`connector+id:${new URLSearchParams({ s: SECRET }).toString().slice(2)}`);
    expect(request?.contentType).toBe('application/x-www-form-urlencoded');
    expect(Object.fromEntries(request?.form ?? [])).toEqual({
      grant_type: 'client_credentials',
      scope: 'kafka:write kafka:read',
    });
    expect(token.value).toMatch(/^token-/);
    expect(token.extensions).toEqual({ logicalCluster: 'lkc-1' });
  });

  it('serves the cached token until 80 % of its lifetime has passed, then fetches a new one', async () => {
    answer = grant(100);
    const now = { at: 1_000_000 };
    const source = tokens(now);
    const first = await source.provide();
    now.at += 79_999;
    const cached = await source.provide();
    now.at += 1;
    const refreshed = await source.provide();

    expect(cached.value).toBe(first.value);
    expect(refreshed.value).not.toBe(first.value);
    expect(seen).toHaveLength(2);
  });

  it('makes one request for callers that ask at the same time', async () => {
    answer = grant();
    const source = tokens({ at: 0 });
    const values = await Promise.all([source.provide(), source.provide(), source.provide()]);

    expect(new Set(values.map((v) => v.value)).size).toBe(1);
    expect(seen).toHaveLength(1);
  });

  it('keeps serving a still-valid token when its refresh fails for a passing reason, and fails once it expired', async () => {
    answer = grant(100);
    const now = { at: 0 };
    const source = tokens(now);
    const first = await source.provide();
    answer = () => ({ status: 503, body: { error: 'temporarily_unavailable' } });
    now.at = 90_000;
    const kept = await source.provide();
    now.at = 100_000;
    const error = await rejectionOf(source.provide());

    expect(kept.value).toBe(first.value);
    expect(error).toBeInstanceOf(RetriableError);
    expect((error as RetriableError).code).toBe('KAFKA_OAUTH_TOKEN_UNAVAILABLE');
  });

  it.each([
    [
      401,
      { error: 'invalid_client', error_description: `bad secret ${SECRET}` },
      FatalError,
      'KAFKA_OAUTH_CLIENT_REJECTED',
    ],
    [400, { error: 'invalid_client' }, FatalError, 'KAFKA_OAUTH_CLIENT_REJECTED'],
    [
      400,
      { error: 'invalid_scope', error_description: 'unknown scope' },
      FatalError,
      'KAFKA_OAUTH_TOKEN_REFUSED',
    ],
    [429, { error: 'slow_down' }, RetriableError, 'KAFKA_OAUTH_TOKEN_UNAVAILABLE'],
    [502, 'bad gateway', RetriableError, 'KAFKA_OAUTH_TOKEN_UNAVAILABLE'],
    [200, { token_type: 'Bearer' }, FatalError, 'KAFKA_OAUTH_TOKEN_INVALID'],
  ] as const)('answers HTTP %i %j with %o %s, never quoting the secret', async (status, body, kind, code) => {
    answer = () => ({ status, body });
    const error = await rejectionOf(tokens({ at: 0 }).provide());

    expect(error).toBeInstanceOf(kind);
    expect((error as ConnectorError).code).toBe(code);
    expect((error as ConnectorError).message).not.toContain(SECRET);
  });

  it('says which key to check when the endpoint cannot be reached', async () => {
    const error = await rejectionOf(
      tokens({ at: 0 }, { tokenEndpointUrl: 'http://127.0.0.1:1/token' }).provide(),
    );

    expect(error).toBeInstanceOf(RetriableError);
    expect((error as RetriableError).message).toContain('kafka.sasl.tokenEndpointUrl');
  });

  it('reads the secret from clientSecretFile, refusing one that others can read', async () => {
    answer = grant();
    const file = join(await mkdtemp(join(tmpdir(), 'kafka-oauth-')), 'secret');
    await writeFile(file, `${SECRET}\n`);
    await chmod(file, 0o644);
    const open = await rejectionOf(
      tokens({ at: 0 }, { clientSecret: undefined, clientSecretFile: file }).provide(),
    );
    await chmod(file, 0o600);
    await tokens({ at: 0 }, { clientSecret: undefined, clientSecretFile: file }).provide();

    expect((open as FatalError).code).toBe('SECRET_FILE_TOO_OPEN');
    expect(Buffer.from(seen[0]?.authorization?.slice(6) ?? '', 'base64').toString()).toMatch(
      /:sekrit\+value/,
    );
  });
});

describe('lifetimeOf', () => {
  it('takes expires_in, else the exp claim of a JWT, else one minute', () => {
    const jwt = (claims: object) => `e30.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.sig`;
    expect(lifetimeOf(300, 'opaque', 0)).toBe(300_000);
    expect(lifetimeOf('300', 'opaque', 0)).toBe(300_000);
    expect(lifetimeOf(undefined, jwt({ exp: 1_000 }), 400_000)).toBe(600_000);
    expect(lifetimeOf(undefined, 'opaque', 0)).toBe(60_000);
  });
});
