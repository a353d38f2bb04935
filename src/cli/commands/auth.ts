/**
 * `calls-connector auth ...`: connect an account of the calls service once (OAuth 2 authorization code).
 *
 *   auth url     print the authorization URL (its state is remembered in the token store for 10 minutes)
 *   auth redeem  --code C --state S: check the state and redeem the code (after `auth url`); `--code -`
 *                reads the code from stdin, so it stays out of `ps` and the shell history
 *   auth login   both in one go, with a local HTTPS listener on the redirect_uri
 *   auth status  whether a grant is stored and when its access token expires (never a secret)
 *
 * The client secret comes from the configuration (`${ENV}` or oauth.clientSecretFile), never from a flag.
 * Human output goes to stdout; logs (level from LOG_LEVEL, default warn) go to stderr as JSON.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import type { GrantSummary } from '../../auth/authorization.js';
import { CallbackListener } from '../../auth/callback-listener.js';
import { login, openInBrowser } from '../../auth/login.js';
import { openOAuth, type OAuthRuntime } from '../../auth/oauth-runtime.js';
import { tokenStoreBackend } from '../../runtime/token-store-backend.js';
import { loadConfig } from '../../config/load.js';
import { createLogger } from '../../logging/logger.js';
import { ExitCode } from '../../errors/exit-codes.js';
import { examples } from '../help-text.js';
import { systemClock } from '../../time/clock.js';

/**
 * The `--code` value: itself, or for `-` the first line of `input` (stdin), trimmed. Throws
 * InvalidArgumentError when stdin holds no code.
 */
export async function readCodeArgument(
  value: string,
  input: NodeJS.ReadableStream = process.stdin,
): Promise<string> {
  if (value !== '-') return value;
  let text = '';
  for await (const chunk of input) {
    text += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    if (text.includes('\n')) break;
  }
  const code = (text.split('\n')[0] ?? '').trim();
  if (code === '') throw new InvalidArgumentError('--code -: stdin held no authorization code');
  return code;
}

interface CommonOptions {
  config: string;
  grant?: string;
  json?: boolean;
}

async function withOAuth<T>(
  options: CommonOptions,
  use: (oauth: OAuthRuntime, grant: string) => Promise<T>,
): Promise<T> {
  const config = await loadConfig(options.config);
  const logger = createLogger({
    level: process.env.LOG_LEVEL ?? 'warn',
    format: 'json',
    destination: process.stderr,
  });
  const oauth = await openOAuth(config, { backendFor: tokenStoreBackend(config, { logger }), logger });
  try {
    return await use(oauth, options.grant ?? oauth.settings.grant);
  } finally {
    await oauth.close();
  }
}

function describeGrant(summary: GrantSummary): string {
  return [
    `grant:                ${summary.grant}`,
    `client_id:            ${summary.clientId}`,
    `scopes:               ${summary.scopes.join(' ')}`,
    `access token expires: ${new Date(summary.accessTokenExpiresAt).toISOString()} (${relative(summary.accessTokenExpiresAt - systemClock.now())})`,
    `obtained:             ${new Date(summary.obtainedAt).toISOString()}`,
    `stored in:            ${summary.store}`,
  ].join('\n');
}

function relative(ms: number): string {
  const abs = Math.abs(ms);
  const text =
    abs >= 3600_000
      ? `${Math.floor(abs / 3600_000)} h ${Math.floor((abs % 3600_000) / 60_000)} min`
      : `${Math.floor(abs / 60_000)} min`;
  return ms >= 0 ? `in ${text}` : `${text} ago; refreshed on next use`;
}

function parseListen(value: string): { host: string; port: number } {
  const match = /^(.+):(\d{1,5})$/.exec(value);
  const port = Number(match?.[2]);
  if (match === null || port > 65535)
    throw new InvalidArgumentError('expected HOST:PORT, e.g. 127.0.0.1:8976');
  return { host: match[1]!.replace(/^\[|\]$/g, ''), port };
}

function parsePositiveSeconds(value: string): number {
  const seconds = Number(value);
  if (!Number.isFinite(seconds) || seconds <= 0)
    throw new InvalidArgumentError('expected a number of seconds > 0');
  return seconds;
}

function common(command: Command): Command {
  return command
    .requiredOption('-c, --config <file>', 'YAML configuration file (with an `oauth` section)')
    .option('-g, --grant <name>', 'grant name (default: oauth.grant)');
}

export function register(program: Command): void {
  const auth = program
    .command('auth')
    .description(
      'Connect the connector to an account of the calls service (OAuth 2) and inspect the stored grant.',
    )
    .addHelpText(
      'after',
      examples(
        'calls-connector auth login --config connector.yaml',
        'calls-connector auth status --config connector.yaml',
      ),
    );

  common(auth.command('url'))
    .description(
      'Print the authorization URL to open in a browser; then run `auth redeem` with the code and state of the redirect.',
    )
    .option('--json', 'print {url, state, expiresAt} as JSON')
    .addHelpText(
      'after',
      examples(
        'calls-connector auth url --config connector.yaml',
        'calls-connector auth url --config connector.yaml --grant acme --json',
      ),
    )
    .action(async (options: CommonOptions) => {
      await withOAuth(options, async (oauth, grant) => {
        const started = await oauth.authorization(grant).start();
        if (options.json) {
          process.stdout.write(
            `${JSON.stringify({ url: started.url, state: started.state, expiresAt: new Date(started.expiresAt).toISOString() })}\n`,
          );
        } else {
          process.stdout.write(
            `Open this URL, sign in and approve:\n\n  ${started.url}\n\n` +
              `The service then redirects to ${oauth.settings.redirectUri}?code=...&state=...\n` +
              `Run within ${Math.round(oauth.settings.stateTtlMs / 60_000)} min:\n` +
              `  calls-connector auth redeem --config ${options.config} --code <code> --state <state>\n`,
          );
        }
      });
    });

  common(auth.command('redeem'))
    .description(
      'Redeem the code of a redirect started by `auth url` (the state must match, once, before it expires).',
    )
    .requiredOption(
      '--code <code>',
      'the code parameter of the redirect, or - to read it from stdin (keeps it out of ps and shell history)',
    )
    .requiredOption('--state <state>', 'the state parameter of the redirect')
    .addHelpText(
      'after',
      examples(
        'calls-connector auth redeem --config connector.yaml --code - --state Q7mB…e4 < code.txt',
        'calls-connector auth redeem --config connector.yaml --code 8Fq2…Zk --state Q7mB…e4',
      ),
    )
    .action(async (options: CommonOptions & { code: string; state: string }) => {
      await withOAuth(options, async (oauth, grant) => {
        const code = await readCodeArgument(options.code);
        const summary = await oauth.authorization(grant).complete(code, options.state);
        process.stdout.write(`Authorized. The grant is stored.\n${describeGrant(summary)}\n`);
      });
    });

  common(auth.command('login'))
    .description(
      'Authorize in one go: open the URL, receive the redirect on a local HTTPS listener, redeem, store.',
    )
    .option(
      '--cert <file>',
      'PEM certificate for the local listener (default: one is generated; its fingerprint is printed)',
    )
    .option('--key <file>', 'PEM private key for --cert')
    .option(
      '--listen <host:port>',
      'bind here instead of the redirect_uri host and port (redirect through a proxy)',
      parseListen,
    )
    .option('--no-open', 'do not try to open a browser; only print the URL')
    .option('--timeout <seconds>', 'how long to wait for the redirect', parsePositiveSeconds, 300)
    .addHelpText(
      'after',
      examples(
        'calls-connector auth login --config connector.yaml',
        'calls-connector auth login --config connector.yaml --no-open --cert cb.pem --key cb-key.pem',
        'calls-connector auth login --config connector.yaml --listen 127.0.0.1:8976 --timeout 600',
      ),
    )
    .action(
      async (
        options: CommonOptions & {
          cert?: string;
          key?: string;
          listen?: { host: string; port: number };
          open: boolean;
          timeout: number;
        },
      ) => {
        await withOAuth(options, async (oauth, grant) => {
          const listener = await CallbackListener.start({
            redirectUri: oauth.settings.redirectUri,
            ...(options.listen && { listen: options.listen }),
            ...(options.cert !== undefined && { certFile: options.cert }),
            ...(options.key !== undefined && { keyFile: options.key }),
          });
          // A private folder (mkdtemp, mode 0700): no predictable /tmp name another user could pre-create.
          const certDir = await mkdtemp(join(tmpdir(), 'calls-connector-callback-'));
          const certPath = join(certDir, 'callback-certificate.pem');
          const interrupt = new AbortController();
          const onSigint = (): void => interrupt.abort();
          process.once('SIGINT', onSigint);
          try {
            if (listener.generated) {
              await writeFile(certPath, listener.certificatePem, { mode: 0o644 });
              process.stdout.write(
                `The local listener uses a certificate generated for this login (written to ${certPath}).\n` +
                  `Your browser will warn about it: accept it only if its SHA-256 fingerprint is\n  ${listener.fingerprint}\n` +
                  `(or pass --cert/--key with a certificate your browser already trusts).\n\n`,
              );
            }
            const summary = await login({
              authorization: oauth.authorization(grant),
              listener,
              show: (url) =>
                process.stdout.write(
                  `Open this URL, sign in and approve (waiting up to ${options.timeout} s):\n\n  ${url}\n\n`,
                ),
              ...(options.open && { open: openInBrowser }),
              timeoutMs: options.timeout * 1000,
              signal: interrupt.signal,
            });
            process.stdout.write(`Authorized. The grant is stored.\n${describeGrant(summary)}\n`);
          } finally {
            process.removeListener('SIGINT', onSigint);
            await listener.close();
            // The generated certificate was for this login only.
            await rm(certDir, { recursive: true, force: true });
          }
        });
      },
    );

  common(auth.command('status'))
    .description(
      'Show whether a grant is stored and when its access token expires (no secret is printed). Exit 3 if none.',
    )
    .option('--json', 'print the status as JSON')
    .addHelpText(
      'after',
      examples(
        'calls-connector auth status --config connector.yaml',
        'calls-connector auth status --config connector.yaml --json || echo "no grant: run auth login"',
      ),
    )
    .action(async (options: CommonOptions) => {
      await withOAuth(options, async (oauth, grant) => {
        const record = await oauth.store.readGrant(grant);
        if (options.json) {
          const status =
            record === undefined
              ? { grant, stored: false, store: oauth.store.description }
              : {
                  grant,
                  stored: true,
                  store: oauth.store.description,
                  clientId: record.clientId,
                  scopes: record.scopes,
                  accessTokenExpiresAt: new Date(record.accessTokenExpiresAt).toISOString(),
                  accessTokenExpired: record.accessTokenExpiresAt <= systemClock.now(),
                  obtainedAt: new Date(record.obtainedAt).toISOString(),
                  refreshTokenPresent: record.refreshToken.length > 0,
                };
          process.stdout.write(`${JSON.stringify(status)}\n`);
        } else if (record === undefined) {
          process.stdout.write(
            `No grant "${grant}" is stored in ${oauth.store.description}. Run: calls-connector auth login --config ${options.config}\n`,
          );
        } else {
          process.stdout.write(
            `${describeGrant({ ...record, store: oauth.store.description })}\nrefresh token:        ${record.refreshToken.length > 0 ? 'present' : 'missing'}\n`,
          );
        }
        if (record === undefined) process.exitCode = ExitCode.NOT_READY;
      });
    });
}
