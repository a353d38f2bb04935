/**
 * The run's sandbox: `calls-connector sandbox` as a process of the built CLI (auto-approving, rotating refresh
 * tokens, the seed's data), and its admin client once a call through it succeeded. Stopping it is registered
 * on the run's lifecycle as soon as it is spawned.
 */
import { join } from 'node:path';
import type { Lifecycle } from './lifecycle.js';
import { cliPath, LoggedProcess, sleep, until } from './processes.js';
import { PORTS } from './run-names.js';
import { SandboxAdmin } from './sandbox-admin.js';
import type { Profile } from './schedule.js';

export interface SandboxSettings {
  seed: number;
  profile: Pick<Profile, 'locations' | 'callsPerLocation'>;
  runDir: string;
  logDir: string;
  clientSecret: string;
  /** The run's webhook secret (`whsec_…`): the sandbox signs its deliveries with it. */
  webhookSecret: string;
  say: (message: string) => void;
}

export interface Sandbox {
  admin: SandboxAdmin;
  /** The sandbox's locations, in its order. */
  locations: string[];
}

export async function startSandbox(settings: SandboxSettings, lifecycle: Lifecycle): Promise<Sandbox> {
  const { profile, seed, runDir } = settings;
  const caFile = join(runDir, 'sandbox-ca.pem');
  const sandbox = new LoggedProcess(
    'sandbox',
    [
      cliPath,
      'sandbox',
      '--port',
      String(PORTS.sandbox),
      '--auto-approve',
      '--rotate-refresh-tokens',
      '--seed',
      String(seed),
      '--locations',
      String(profile.locations),
      '--calls',
      String(profile.callsPerLocation),
      '--group-count',
      '2',
      '--group-size',
      '150',
      '--client-id',
      'chaos-client',
      '--redirect-uri',
      `https://127.0.0.1:${PORTS.callback}/callback`,
      '--cert-out',
      caFile,
      '--locations-out',
      join(runDir, 'locations.json'),
    ],
    join(settings.logDir, 'sandbox.log'),
    {
      ...process.env,
      SANDBOX_CLIENT_SECRET: settings.clientSecret,
      SANDBOX_WEBHOOK_SECRET: settings.webhookSecret,
    },
  );
  // Set by the readiness check below (a closure the compiler cannot follow, hence a holder).
  const held: { admin: SandboxAdmin | null } = { admin: null };
  lifecycle.defer(async () => {
    if (sandbox.running) {
      sandbox.signal('SIGTERM');
      await Promise.race([sandbox.exited, sleep(10_000)]);
      sandbox.signal('SIGKILL');
    }
    await held.admin?.close().catch(() => undefined);
  });
  const baseUrl = `https://127.0.0.1:${PORTS.sandbox}`;
  // The CA file is written while the sandbox starts: a client is kept only once a call through it succeeded.
  const up = await until(async () => {
    if (!sandbox.running) throw new Error('sandbox exited');
    const client = await SandboxAdmin.open(baseUrl, caFile);
    try {
      await client.call('GET', 'clock');
    } catch (error) {
      await client.close();
      throw error;
    }
    held.admin = client;
    return true;
  }, 120_000);
  const admin = held.admin;
  if (!up || admin === null) throw new Error(`the sandbox did not start; see ${sandbox.logFile}`);
  const locations = (await admin.call<{ data: string[] }>('GET', 'locations')).data;
  settings.say(`sandbox up on ${baseUrl} (${locations.length} locations)`);
  return { admin, locations };
}
