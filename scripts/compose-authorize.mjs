#!/usr/bin/env node
// One-shot OAuth authorization for docker-compose.yml (the `authorize` service), against the sandbox
// started with --auto-approve: the real authorization-code flow of spec 5, minus the person.
//
//   1. `calls-connector auth url --json` builds the authorization URL and remembers its state in the
//      encrypted token store (the `tokens` volume the connector reads too);
//   2. the authorization URL is requested like a browser would; the auto-approving sandbox answers with
//      a redirect to the registered redirect_uri carrying `code` and `state`, which is read, not followed;
//   3. `calls-connector auth redeem --code --state` checks the state and stores the token pair.
//
// It authorizes on every `docker compose up`: the sandbox keeps its grants in memory, so a grant stored
// by an earlier run would be unknown to a freshly started sandbox. Against a real calls service, run
// `calls-connector auth login` once instead (a person approves). Trusts the sandbox CA through
// NODE_EXTRA_CA_CERTS, set by compose. Exit status: 0 authorized, 1 otherwise (with the reason).
import { spawnSync } from 'node:child_process';

const config = process.argv[2] ?? '/etc/calls-connector/config.yaml';
const cliMain = process.env.CALLS_CONNECTOR_CLI ?? 'dist/src/cli/main.js';

function cli(args) {
  const result = spawnSync(process.execPath, [cliMain, ...args, '--config', config], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (result.status !== 0) {
    process.stderr.write(`authorize: calls-connector ${args[0]} ${args[1]} failed (exit ${result.status})\n`);
    process.exit(1);
  }
  return result.stdout;
}

function fail(message) {
  process.stderr.write(`authorize: ${message}\n`);
  process.exit(1);
}

const { url } = JSON.parse(cli(['auth', 'url', '--json']));
let response;
try {
  response = await fetch(url, { redirect: 'manual', signal: AbortSignal.timeout(30_000) });
} catch (error) {
  fail(`cannot reach the authorization endpoint: ${error instanceof Error ? error.message : String(error)}`);
}
const location = response.headers.get('location');
if (response.status < 300 || response.status > 399 || location === null) {
  fail(
    `expected a redirect from the authorization endpoint (is the sandbox started with --auto-approve?), got HTTP ${response.status}`,
  );
}
const redirect = new URL(location);
const error = redirect.searchParams.get('error');
if (error !== null)
  fail(`authorization refused: ${error} ${redirect.searchParams.get('error_description') ?? ''}`);
const code = redirect.searchParams.get('code');
const state = redirect.searchParams.get('state');
if (code === null || state === null) fail('the redirect carries no code or state');

process.stdout.write(cli(['auth', 'redeem', '--code', code, '--state', state]));
