/**
 * What one run of `calls-connector demo` owns in its folder (default `.calls-connector/demo/`), and how a run
 * takes it over from whatever the last one left.
 *
 * Decision: every run starts afresh. A run starts a new sandbox (new client secret, new data), so a grant kept
 * from an earlier run names a client and tokens the new sandbox never issued, and it publishes to topics of its
 * own (named after its start time); so each run writes a new token-store key and a new store and replaces the
 * config, and nothing of the last run is reused. Kept together, key and store cannot disagree: reusing the one
 * without the other is what made a second demo fail with AUTH_STORE_KEY_MISMATCH.
 *
 * Contract, whatever the last run went through (a clean stop, a kill -9, an interruption before its grant was
 * stored): `startFresh` first removes the last run's token store (with its lock and temporary files), its config
 * and its sandbox files, and only then writes the new secrets, each one atomically (temporary file, then
 * rename). An interruption at any point leaves either no store or a store written with the key beside it, and
 * never a torn key; the next run removes whatever is there again.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, rename, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { ConnectorError, FatalError } from '../errors/index.js';
import { shellWord } from './next-steps.js';

/** The files of a demo run, all under its folder. */
export interface DemoFiles {
  workDir: string;
  /** The connector's config, for `run`, `tail`, `auth login` by hand. */
  configFile: string;
  /** The token-store key and the store: in sibling folders (the store refuses a key beside its data). */
  keyFile: string;
  storeFile: string;
  /** The sandbox client's secret, and the client as `calls-connector sandbox --client-file` reads it. */
  secretFile: string;
  /** The sandbox's webhook signing secret, which the demo's receivers check (demo-webhooks.ts). */
  webhookSecretFile: string;
  clientFile: string;
  /** The sandbox's certificate (the config's api.caFile) and its key. */
  certFile: string;
  certKeyFile: string;
  /** Where the printed sandbox command writes its location uids. */
  locationsFile: string;
  /** The connector's log (appended to by every run). */
  logFile: string;
}

export function demoFiles(folder: string): DemoFiles {
  const workDir = resolve(folder);
  return {
    workDir,
    configFile: join(workDir, 'config.yaml'),
    keyFile: join(workDir, 'secrets', 'token-store.key'),
    storeFile: join(workDir, 'tokens', 'tokens.enc'),
    secretFile: join(workDir, 'secrets', 'client-secret'),
    webhookSecretFile: join(workDir, 'secrets', 'webhook-secret'),
    clientFile: join(workDir, 'secrets', 'sandbox-client.json'),
    certFile: join(workDir, 'sandbox-ca.pem'),
    certKeyFile: join(workDir, 'secrets', 'sandbox-key.pem'),
    locationsFile: join(workDir, 'sandbox-locations.json'),
    logFile: join(workDir, 'connector.log'),
  };
}

/** The sandbox client a run registers (the sandbox's `client` option and `--client-file`). */
export interface DemoClient {
  clientId: string;
  clientSecret: string;
  redirectUri: string;
}

/** The first lines of a run: where its files are and that it starts afresh (what a newcomer needs to know). */
export function freshStateNotice(files: DemoFiles): string {
  return (
    `calls-connector demo: files in ${files.workDir}\n` +
    '    Each run starts afresh there: a new sandbox, token-store key, encrypted tokens, config and topics;\n' +
    "    the last run's files are replaced (its topics stay in Kafka)."
  );
}

/**
 * Removes what the last run left (token store first) and writes this run's key, client secret and client file.
 * Resolves with nothing to undo: the files stay for the "run the connector alone" steps printed at the end.
 */
export async function startFresh(files: DemoFiles, client: DemoClient): Promise<void> {
  await mkdir(files.workDir, { recursive: true, mode: 0o700 });
  // The store before the key: from here on no store exists that the new key cannot open.
  await rm(dirname(files.storeFile), { recursive: true, force: true });
  await Promise.all(
    [files.configFile, files.certFile, files.certKeyFile, files.locationsFile].map((file) =>
      rm(file, { force: true }),
    ),
  );
  await mkdir(dirname(files.keyFile), { recursive: true, mode: 0o700 });
  // Temporary files of a write a kill -9 interrupted.
  for (const name of await readdir(dirname(files.keyFile)))
    if (TEMPORARY.test(name)) await rm(join(dirname(files.keyFile), name), { force: true });
  await writePrivateFileAtomically(files.keyFile, randomBytes(32).toString('base64'));
  await writePrivateFileAtomically(files.secretFile, client.clientSecret);
  await writePrivateFileAtomically(files.clientFile, JSON.stringify(client));
}

/** The name `writePrivateFileAtomically` gives its temporary file. */
const TEMPORARY = /^\..+\.\d+\.[0-9a-f]{12}\.tmp$/;

/**
 * Writes `text` to `path` (mode 0600) whole or not at all: a temporary file beside it, synced, renamed over it.
 * The mode is set at creation, so the secret is never readable by others, even for a moment.
 */
export async function writePrivateFileAtomically(path: string, text: string): Promise<void> {
  const temp = join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(temp, 'wx', 0o600);
  try {
    await handle.writeFile(text, 'utf8');
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}

/**
 * The error a demo user sees for `error`: a token-store error can only come from the demo's own folder (the
 * run wrote that store and its key), so instead of the store's own advice (`auth login`, configure another key)
 * it names the one command that clears the folder. Any other error is returned as it is.
 */
export function leftoverError(error: unknown, files: DemoFiles): unknown {
  if (!(error instanceof ConnectorError) || !error.code.startsWith('AUTH_STORE_')) return error;
  return new FatalError(
    'DEMO_FOLDER_UNUSABLE',
    `the demo's token store in ${files.workDir} cannot be used (${error.code}); ` +
      `\`rm -rf ${shellWord(files.workDir)}\` clears the demo's files, then run the demo again`,
    { cause: error },
  );
}
