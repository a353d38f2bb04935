/**
 * `auth login` as a function: start an authorization, show the URL to the person (and open it), wait for the
 * redirect on the local callback listener, check the state, redeem the code, store the grant.
 *
 * The listener checks that the redirect's state is the one this login issued; `Authorization.complete` then
 * checks it against the store (unknown, expired, reused), so a state is accepted once only.
 */
import { spawn } from 'node:child_process';
import type { Authorization, GrantSummary } from './authorization.js';
import type { CallbackListener } from './callback-listener.js';

export interface LoginOptions {
  authorization: Authorization;
  listener: CallbackListener;
  /** Shows the URL (and any certificate hint) to the person. */
  show: (url: string) => void;
  /** Opens the URL in a browser; absent = only shown. */
  open?: (url: string) => void;
  timeoutMs: number;
  signal?: AbortSignal;
}

export async function login(options: LoginOptions): Promise<GrantSummary> {
  const started = await options.authorization.start();
  options.show(started.url);
  options.open?.(started.url);
  // A redirect after the state's expiry is still received, and then refused by `complete` as expired.
  const redirect = await options.listener.waitForRedirect(started.state, options.timeoutMs, options.signal);
  return options.authorization.complete(redirect.code, redirect.state, options.signal);
}

/** Best effort: the platform's URL opener, detached; failures are ignored (the URL is printed anyway). */
export function openInBrowser(url: string): void {
  const [command, args] =
    process.platform === 'darwin'
      ? ['open', [url]]
      : process.platform === 'win32'
        ? ['rundll32', ['url.dll,FileProtocolHandler', url]]
        : ['xdg-open', [url]];
  try {
    const child = spawn(command, args, { detached: true, stdio: 'ignore' });
    child.on('error', () => undefined);
    child.unref();
  } catch {
    // No opener on this machine: the person copies the printed URL.
  }
}
