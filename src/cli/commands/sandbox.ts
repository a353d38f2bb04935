/**
 * `calls-connector sandbox`: runs the calls API simulator (packages/sandbox) until SIGINT/SIGTERM.
 *
 * The client secret comes from SANDBOX_CLIENT_SECRET (or a client file), never from a flag, so it does not
 * land in shell history or `ps`; the admin key likewise from SANDBOX_ADMIN_KEY. The banner shows the
 * secret only when it is the well-known default one. The webhook signing secret likewise comes from
 * SANDBOX_WEBHOOK_SECRET; without it a fresh one is made and shown once, for the connector's configuration.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { ConfigError } from '../../config/load.js';
import { FatalError } from '../../errors/index.js';
import { DEFAULT_CLIENT, startSandbox, WEBHOOK_SHAPES } from '@calls-connector/sandbox';
import { ExitCode } from '../../errors/exit-codes.js';
import { examples } from '../help-text.js';
import { DEFAULT_CERT_OUT, isLoopback, sandboxOptionsFrom, type SandboxFlags } from './sandbox-options.js';

export { sandboxOptionsFrom, type SandboxFlags };

function int(name: string, min: number, max = Number.MAX_SAFE_INTEGER): (v: string) => number {
  return (v) => {
    if (!/^-?\d+$/.test(v) || Number(v) < min || Number(v) > max) {
      throw new InvalidArgumentError(`${name} must be an integer from ${min} to ${max}`);
    }
    return Number(v);
  };
}

function num(name: string, min: number, max = Number.POSITIVE_INFINITY): (v: string) => number {
  return (v) => {
    const n = Number(v);
    if (v.trim() === '' || !Number.isFinite(n) || n < min || n > max)
      throw new InvalidArgumentError(`${name} must be a number from ${min} to ${max}`);
    return n;
  };
}

const rate = (name: string): ((v: string) => number) => num(name, 0, 1);

async function run(f: SandboxFlags): Promise<void> {
  const options = await sandboxOptionsFrom(f, process.env);
  if (options.tls === false && !isLoopback(f.host)) {
    process.stderr.write('calls-connector sandbox: warning: plain HTTP on a non-loopback address\n');
  }
  let sandbox;
  try {
    sandbox = await startSandbox(options);
  } catch (error) {
    if (error instanceof RangeError) throw new ConfigError(error.message, [], error);
    const { code, syscall, path } = error as NodeJS.ErrnoException;
    if (syscall === 'open' || syscall === 'read') {
      throw new ConfigError(
        `cannot open ${path ?? 'a file'} (${code ?? syscall}): check the paths given to --cert, --key and --cert-out`,
        [],
        error,
      );
    }
    if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL') {
      throw new FatalError(
        'SANDBOX_LISTEN_FAILED',
        `cannot listen on ${f.host}:${f.port} (${code}); choose another --port or --host`,
        {
          cause: error,
        },
      );
    }
    throw error;
  }
  const locationsOut = resolve(f.locationsOut);
  await mkdir(dirname(locationsOut), { recursive: true });
  await writeFile(locationsOut, `${JSON.stringify(sandbox.locations, null, 2)}\n`);
  const { client } = sandbox;
  const secretShown =
    client.clientSecret === DEFAULT_CLIENT.clientSecret
      ? client.clientSecret
      : process.env.SANDBOX_CLIENT_SECRET
        ? '(from SANDBOX_CLIENT_SECRET)'
        : `(from ${f.clientFile ?? 'the client file'})`;
  const shown = sandbox.locations.slice(0, 3).join(', ') + (sandbox.locations.length > 3 ? ', ...' : '');
  process.stdout.write(
    [
      `calls API sandbox listening on ${sandbox.baseUrl}`,
      `  listing        GET ${sandbox.baseUrl}/v4/calls   single call GET ${sandbox.baseUrl}/v4/calls/{uid}`,
      `  oauth          ${sandbox.baseUrl}/oauth/authorize   ${sandbox.baseUrl}/oauth/token`,
      `  client_id      ${client.clientId}`,
      `  client_secret  ${secretShown}`,
      `  redirect_uri   ${client.redirectUri}`,
      `  auto-approve   ${options.autoApprove ? 'on' : 'off (log in as sandbox / sandbox)'}`,
      `  locations      ${sandbox.locations.length} (${shown}) written to ${locationsOut}`,
      `  CA certificate ${sandbox.caFile ?? '(plain HTTP, none)'}`,
      `  admin          ${sandbox.baseUrl}/_sandbox/  (truth, calls, clock, tokens, faults, stats, webhooks)${options.adminKey ? ' - key required' : ''}`,
      `  webhooks       ${sandbox.admin.webhooks.targets().join(', ') || 'no target (POST /_sandbox/webhooks/targets)'}; ${sandbox.admin.webhooks.shape} shape, secret ${process.env.SANDBOX_WEBHOOK_SECRET ? '(from SANDBOX_WEBHOOK_SECRET)' : sandbox.admin.webhooks.secret}`,
      'Press Ctrl-C to stop.',
      '',
    ].join('\n'),
  );
  const signal = await new Promise<NodeJS.Signals>((resolveSignal) => {
    process.once('SIGINT', () => resolveSignal('SIGINT'));
    process.once('SIGTERM', () => resolveSignal('SIGTERM'));
  });
  process.stdout.write(`received ${signal}, stopping the sandbox\n`);
  await sandbox.close();
  process.exitCode = ExitCode.OK;
}

export function register(program: Command): void {
  program
    .command('sandbox')
    .description(
      'Run the calls API sandbox: OAuth + calls endpoints over HTTPS, seeded data, live changes and faults.',
    )
    .option('--port <n>', 'port to listen on', int('--port', 0, 65535), 8443)
    .option('--host <addr>', 'address to bind', '127.0.0.1')
    .option('--http', 'plain HTTP instead of HTTPS (local experiments only)')
    .option('--cert <file>', 'TLS certificate (PEM) instead of a generated one')
    .option('--key <file>', 'TLS private key (PEM) for --cert')
    .option(
      '--cert-out <file>',
      `where to write the CA certificate clients should trust (default: the --cert file, else ${DEFAULT_CERT_OUT})`,
    )
    .option('--client-file <file>', 'registered client as JSON {clientId, redirectUri, clientSecret?}')
    .option(
      '--client-id <id>',
      `registered client_id (default ${DEFAULT_CLIENT.clientId}); secret from SANDBOX_CLIENT_SECRET`,
    )
    .option('--redirect-uri <url>', `registered https redirect_uri (default ${DEFAULT_CLIENT.redirectUri})`)
    .option('--auto-approve', 'approve authorization requests without the login page')
    .option('--rotate-refresh-tokens', 'each refresh retires the refresh token it used')
    .option('--seed <n>', 'data seed', int('--seed', 0), 1)
    .option('--locations <n>', 'number of locations', int('--locations', 1, 100_000), 5)
    .option('--calls <n>', 'calls per location', int('--calls', 0, 10_000_000), 1000)
    .option('--private-ratio <r>', 'share of private calls', rate('--private-ratio'))
    .option(
      '--third-party-ratio <r>',
      'share of third-party calls (never listed)',
      rate('--third-party-ratio'),
    )
    .option(
      '--unrepresentable-ratio <r>',
      'share of calls omitted from pages',
      rate('--unrepresentable-ratio'),
    )
    .option(
      '--group-count <n>',
      'groups of calls sharing one updatedAt, per location',
      int('--group-count', 0),
    )
    .option('--group-size <n>', 'calls per same-instant group', int('--group-size', 0))
    .option(
      '--locations-out <file>',
      'where to write the location uids (JSON)',
      '.calls-connector/sandbox-locations.json',
    )
    .option('--live-updates <r>', 'existing calls updated per second', num('--live-updates', 0))
    .option('--live-creates <r>', 'new calls per second', num('--live-creates', 0))
    .option('--fault-seed <n>', 'seed of the fault draws', int('--fault-seed', 0))
    .option(
      '--fault-latency-median <ms>',
      'added latency, log-normal median',
      num('--fault-latency-median', 0),
    )
    .option('--fault-latency-p99 <ms>', 'added latency, 99th percentile', num('--fault-latency-p99', 0))
    .option('--fault-rate-limit <r>', 'share of requests answered 429', rate('--fault-rate-limit'))
    .option('--fault-retry-after <s>', 'Retry-After seconds on 429', num('--fault-retry-after', 0))
    .addOption(
      new Option('--fault-retry-after-form <form>', 'how every 429 writes its Retry-After').choices([
        'delay-seconds',
        'http-date',
      ]),
    )
    .option(
      '--limit-rps <r>',
      'enforce a request rate (token bucket, 429 with Retry-After beyond it), hidden unless --limit-headers',
      num('--limit-rps', 0.001),
    )
    .option(
      '--limit-burst <n>',
      'token bucket size (default: one second of --limit-rps)',
      num('--limit-burst', 1),
    )
    .option(
      '--limit-per <who>',
      'whose requests share a bucket: sandbox, token (default) or client',
      (v: string) => {
        if (v !== 'sandbox' && v !== 'token' && v !== 'client')
          throw new InvalidArgumentError('--limit-per must be sandbox, token or client');
        return v;
      },
    )
    .addOption(
      new Option(
        '--limit-headers [style]',
        'announce the limit: ietf (RateLimit-Policy / RateLimit, the default) or x-ratelimit (X-RateLimit-*)',
      ).choices(['ietf', 'x-ratelimit']),
    )
    .addOption(
      new Option(
        '--limit-reset-form <form>',
        'how the announced reset is written (default delta-seconds)',
      ).choices(['delta-seconds', 'epoch-seconds', 'epoch-ms']),
    )
    .option(
      '--limit-quota <n>',
      'requests allowed per quota window (429 quota_exhausted beyond)',
      int('--limit-quota', 0),
    )
    .option(
      '--limit-quota-window <s>',
      'quota window in seconds (default one day)',
      num('--limit-quota-window', 1),
    )
    .option(
      '--fault-server-error <r>',
      'share of requests answered 500/502/503',
      rate('--fault-server-error'),
    )
    .option('--fault-drop <r>', 'share of responses cut off mid-body', rate('--fault-drop'))
    .option('--fault-malformed <r>', 'share of responses with malformed JSON', rate('--fault-malformed'))
    .option(
      '--fault-cursor-ttl <ms>',
      'cursor lifetime (short = cursors expire)',
      num('--fault-cursor-ttl', 0),
    )
    .option(
      '--fault-token-expiry <r>',
      'share of requests whose access token expires early',
      rate('--fault-token-expiry'),
    )
    .option(
      '--fault-refresh-revoke <r>',
      'share of refreshes whose refresh token is revoked',
      rate('--fault-refresh-revoke'),
    )
    .addOption(
      new Option('--fault-token-endpoint', 'apply latency/429/5xx/drop/malformed faults to /oauth/token too'),
    )
    .option(
      '--webhook-target <url>',
      'send signed call.* webhooks to this URL (repeatable; secret from SANDBOX_WEBHOOK_SECRET)',
      (v: string, previous: string[] = []) => [...previous, v],
    )
    .option('--webhook-omit-location', 'leave data.locationUid out of the webhook payloads')
    .addOption(
      new Option('--webhook-shape <name>', 'sign webhooks the way this sender does (docs/webhooks.md)')
        .choices(WEBHOOK_SHAPES)
        .default('standard-webhooks'),
    )
    .option(
      '--webhook-retry-attempts <n>',
      'attempts per delivery before it is given up (default 5)',
      int('--webhook-retry-attempts', 1),
    )
    .option(
      '--webhook-retry-initial-delay <ms>',
      'wait before the first retry, doubling per attempt (default 250)',
      int('--webhook-retry-initial-delay', 0),
    )
    .option(
      '--webhook-retry-max-delay <ms>',
      'longest wait between retries (default 10000)',
      int('--webhook-retry-max-delay', 0),
    )
    .addHelpText(
      'after',
      examples(
        'calls-connector sandbox --auto-approve',
        'calls-connector sandbox --port 0 --locations 20 --calls 5000 --live-updates 5 --live-creates 2',
        'calls-connector sandbox --auto-approve --fault-rate-limit 0.1 --fault-server-error 0.05',
      ),
    )
    .action(async (flags: SandboxFlags) => {
      await run(flags);
    });
}
