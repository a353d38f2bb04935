/**
 * The local HTTPS listener of `auth login`: receives the browser's redirect to the registered redirect_uri
 * (spec 4.1: `?code=..&state=..`, or `?error=..` when the person declines) and hands code and state over.
 *
 * It listens on the redirect_uri's own host and port (which must therefore be this machine: a loopback
 * address or `localhost`) unless told otherwise (`listen`, for a redirect that reaches us through a proxy),
 * and answers only GET on the redirect_uri's path. TLS uses a certificate and key given by path, or a
 * certificate generated at start for the redirect host, whose SHA-256 fingerprint is printed so the person can
 * check what the browser shows before trusting it.
 *
 * A redirect whose state differs from the one this login issued is refused (CSRF) and ends the login.
 */
import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateSelfSigned, type CertificatePair } from '@calls-connector/self-signed';
import { FatalError } from '../errors/index.js';
import { assertHttpsRedirectUri } from './authorize-url.js';
import { startTimer, systemClock, type Clock } from '../time/clock.js';

export interface CallbackListenerOptions {
  redirectUri: string;
  /** Address to bind instead of the redirect_uri's host and port (port 0 = ephemeral). */
  listen?: { host: string; port: number };
  /** PEM certificate and key files; absent = a generated certificate. */
  certFile?: string;
  keyFile?: string;
  /** Where the wait for the redirect times out (default: the system clock). */
  clock?: Clock;
}

export interface ReceivedRedirect {
  code: string;
  state: string;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', '[::1]', 'localhost']);

export class CallbackListener {
  private waiter:
    { resolve: (r: ReceivedRedirect) => void; reject: (e: Error) => void; state: string } | undefined;

  private constructor(
    private readonly server: Server,
    private readonly path: string,
    /** The certificate served (PEM): what a client must trust. */
    readonly certificatePem: string,
    /** SHA-256 fingerprint of that certificate, as browsers show it. */
    readonly fingerprint: string,
    /** True when the certificate was generated here rather than given by path. */
    readonly generated: boolean,
    private readonly clock: Clock,
  ) {
    server.on('request', (req: IncomingMessage, res: ServerResponse) => this.handle(req, res));
  }

  static async start(options: CallbackListenerOptions): Promise<CallbackListener> {
    const redirect = assertHttpsRedirectUri(options.redirectUri);
    const host = options.listen?.host ?? redirect.hostname;
    const port = options.listen?.port ?? (redirect.port === '' ? 443 : Number(redirect.port));
    if (options.listen === undefined && !LOOPBACK.has(redirect.hostname)) {
      throw new FatalError(
        'AUTH_CALLBACK_NOT_LOCAL',
        `the redirect_uri host ${redirect.hostname} is not this machine, so \`auth login\` cannot receive the redirect; ` +
          'use `auth url` and `auth redeem --code --state`, or pass --listen HOST:PORT if the redirect reaches this machine through a proxy',
      );
    }
    if ((options.certFile === undefined) !== (options.keyFile === undefined)) {
      throw new FatalError(
        'AUTH_CALLBACK_TLS_INCOMPLETE',
        'give both --cert and --key, or neither (a certificate is then generated)',
      );
    }
    const generated = options.certFile === undefined;
    const { cert, key } = generated
      ? await generateLoopbackCertificate(redirect.hostname)
      : await readPair(options.certFile ?? '', options.keyFile ?? '');
    const server = createServer({ cert, key });
    await new Promise<void>((resolve, reject) => {
      server.once('error', (error: NodeJS.ErrnoException) =>
        reject(
          new FatalError(
            'AUTH_CALLBACK_LISTEN_FAILED',
            `cannot listen on ${host}:${port} for the OAuth redirect (${error.code ?? error.message})`,
            { cause: error },
          ),
        ),
      );
      server.listen(port, host, () => resolve());
    });
    const fingerprint = new X509Certificate(cert).fingerprint256;
    return new CallbackListener(
      server,
      redirect.pathname,
      cert,
      fingerprint,
      generated,
      options.clock ?? systemClock,
    );
  }

  /** The bound port (differs from the redirect_uri's only with `listen.port: 0`). */
  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** Resolves with the first redirect carrying `state`; rejects on a mismatched state, a declined grant or timeout. */
  waitForRedirect(state: string, timeoutMs: number, signal?: AbortSignal): Promise<ReceivedRedirect> {
    if (this.waiter !== undefined) throw new Error('already waiting for a redirect');
    return new Promise<ReceivedRedirect>((resolve, reject) => {
      const timer = startTimer(this.clock, timeoutMs, () =>
        finish(
          new FatalError(
            'AUTH_LOGIN_TIMEOUT',
            `no redirect arrived within ${Math.round(timeoutMs / 1000)} s; run \`auth login\` again`,
          ),
        ),
      );
      const onAbort = (): void => finish(new FatalError('AUTH_LOGIN_ABORTED', 'the login was interrupted'));
      signal?.addEventListener('abort', onAbort, { once: true });
      const finish = (outcome: ReceivedRedirect | Error): void => {
        timer.cancel();
        signal?.removeEventListener('abort', onAbort);
        this.waiter = undefined;
        if (outcome instanceof Error) reject(outcome);
        else resolve(outcome);
      };
      this.waiter = { state, resolve: finish, reject: finish };
    });
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'https://callback.invalid');
    if (req.method !== 'GET' || url.pathname !== this.path) {
      page(res, 404, 'Not found', 'This address only receives the OAuth redirect.');
      return;
    }
    const waiter = this.waiter;
    if (waiter === undefined) {
      page(res, 409, 'No login in progress', 'Start again with calls-connector auth login.');
      return;
    }
    const error = url.searchParams.get('error');
    const code = url.searchParams.get('code');
    const state = url.searchParams.get('state');
    if (state !== waiter.state) {
      page(
        res,
        400,
        'Authorization refused',
        'The state does not match the login in progress (possible cross-site request forgery).',
      );
      waiter.reject(
        new FatalError(
          'AUTH_STATE_MISMATCH',
          'the redirect carried a state other than the one this login issued (possible cross-site request forgery); nothing was redeemed',
        ),
      );
      return;
    }
    if (error !== null) {
      page(
        res,
        400,
        'Authorization declined',
        'The calls service did not grant access. You can close this window.',
      );
      waiter.reject(
        new FatalError(
          'AUTH_DECLINED',
          `the authorization was not granted (${error.replace(/[^\w.-]/g, '').slice(0, 60)})`,
        ),
      );
      return;
    }
    if (code === null || code === '') {
      page(res, 400, 'Authorization incomplete', 'The redirect carried no code.');
      waiter.reject(new FatalError('AUTH_CODE_MISSING', 'the redirect carried no authorization code'));
      return;
    }
    page(res, 200, 'Authorization received', 'You can close this window and return to the terminal.');
    waiter.resolve({ code, state });
  }
}

function page(res: ServerResponse, status: number, title: string, text: string): void {
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    connection: 'close',
  });
  res.end(`<!doctype html><meta charset="utf-8"><title>${title}</title><h1>${title}</h1><p>${text}</p>`);
}

/** The --cert and --key files, read one after the other so that an error names the first one unreadable. */
async function readPair(certFile: string, keyFile: string): Promise<{ cert: string; key: string }> {
  return { cert: await readTlsFile(certFile, '--cert'), key: await readTlsFile(keyFile, '--key') };
}

async function readTlsFile(path: string, flag: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw new FatalError(
      'AUTH_CALLBACK_TLS_UNREADABLE',
      `cannot read ${path} (${flag}, ${(error as NodeJS.ErrnoException).code ?? 'error'}): check the path and its permissions`,
      { cause: error },
    );
  }
}

/** A one-day leaf certificate (ECDSA P-256) for the redirect host, used once by this login. */
function generateLoopbackCertificate(hostname: string): Promise<CertificatePair> {
  return generateSelfSigned({
    commonName: `calls-connector auth login (${hostname.replace(/^\[|\]$/g, '')})`,
    hosts: [hostname],
    validityMs: 24 * 3600_000,
  });
}
