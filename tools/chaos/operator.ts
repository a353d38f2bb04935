/**
 * The operator of a chaos run: `auth login` as an operator runs it, with the driver as the browser (the
 * sandbox user auto-approves), once per grant before the connector starts; then, paged by
 * AUTH_GRANT_REVOKED (a kill between a refresh and its storage, with rotated refresh tokens), again for each
 * grant an instance's log says was lost, at most once per 30 s per grant (the other instances of a shared grant
 * say so too). It watches every log all along, not only after a fault, since the other grant's progress does
 * not tell whether one was lost. It also sends the signals the fault units ask for (`signal backfill`).
 */
import { writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { GRANTS, revokedGrants, type GrantName } from './fault-checks.js';
import { cliPath, runToEnd, sleep } from './processes.js';
import type { SandboxAdmin } from './sandbox-admin.js';

export interface OperatorSettings {
  admin: Pick<SandboxAdmin, 'follow'>;
  /** Writes the config `auth login` runs with; returns the file. */
  configFile: () => string;
  env: () => NodeJS.ProcessEnv;
  logDir: string;
  /** The log files of every connector process started so far. */
  connectorLogs: () => string[];
  say: (message: string) => void;
  /** True once the run ends its background work. */
  stopped: () => boolean;
}

export class Operator {
  /** `auth login` runs that succeeded. */
  logins = 0;
  /** How much of each instance's log the operator has read (the AUTH_GRANT_REVOKED pages it acted on). */
  private readonly logRead = new Map<string, number>();
  private readonly lastLoginAt = new Map<GrantName, number>();
  private pending: Promise<void> = Promise.resolve();
  /** `signal` runs so far (their logs: signal-N.log). */
  private signals = 0;

  constructor(private readonly settings: OperatorSettings) {}

  /** The logs of every `auth login` and `signal` run (the checker looks for secrets in them too). */
  get logFiles(): string[] {
    return [
      ...Array.from({ length: this.logins }, (_, i) => join(this.settings.logDir, `auth-login-${i + 1}.log`)),
      ...Array.from({ length: this.signals }, (_, i) => join(this.settings.logDir, `signal-${i + 1}.log`)),
    ];
  }

  /**
   * `signal backfill --wait` for `location` over [since, until), giving up after `timeoutMs`. Resolves with the
   * signal's id (the first line it prints; null when it ends without one) as soon as it is printed, and `ended`,
   * which resolves when the command ends: the last outcome line it printed and its exit code (0: done).
   */
  async backfill(
    range: { location: string; since: string; until: string },
    timeoutMs: number,
  ): Promise<{ id: string | null; ended: Promise<{ outcome: string | null; code: number | null }> }> {
    const n = ++this.signals;
    const log = join(this.settings.logDir, `signal-${n}.log`);
    let printed: (id: string | null) => void = () => undefined;
    const firstLine = new Promise<string | null>((resolve) => (printed = resolve));
    const run = runToEnd(
      [
        cliPath,
        'signal',
        'backfill',
        '--config',
        this.settings.configFile(),
        '--location',
        range.location,
        '--since',
        range.since,
        '--until',
        range.until,
        '--wait',
        '--timeout',
        `${Math.ceil(timeoutMs / 1000)}s`,
      ],
      this.settings.env(),
      (stdout) => {
        const first = /^([0-9a-f-]{36})\n/.exec(stdout);
        if (first !== null) printed(first[1] ?? null);
      },
    );
    const ended = run.then((result) => {
      printed(null);
      writeFileSync(log, `${result.stdout}\n${result.stderr}`);
      const lines = result.stdout.split('\n').filter((l) => l.trim() !== '');
      const outcome = lines.length > 1 ? (lines.at(-1) ?? null) : null;
      this.settings.say(`signal backfill #${n}: ${outcome ?? 'no outcome'} (exit ${result.code})`);
      return { outcome, code: result.code };
    });
    return { id: await firstLine, ended };
  }

  /** `auth login --grant <grant>`, the driver following the authorization URL it prints. */
  async authorize(grant: GrantName): Promise<void> {
    const { admin, say } = this.settings;
    const n = this.logins + 1;
    const log = join(this.settings.logDir, `auth-login-${n}.log`);
    let followed = false;
    const result = await runToEnd(
      [
        cliPath,
        'auth',
        'login',
        '--config',
        this.settings.configFile(),
        '--grant',
        grant,
        '--no-open',
        '--timeout',
        '60',
      ],
      this.settings.env(),
      (stdout) => {
        const url = /https:\/\/127\.0\.0\.1:\d+\/oauth\/authorize\?\S+/.exec(stdout)?.[0];
        if (url === undefined || followed) return;
        followed = true;
        void (async () => {
          const callback = await admin.follow(url, false);
          if (callback !== null) await admin.follow(callback, true);
        })().catch((error: unknown) => say(`scripted browser failed: ${String(error)}`));
      },
    );
    writeFileSync(log, `${result.stdout}\n${result.stderr}`);
    if (result.code !== 0) throw new Error(`auth login exited ${result.code}; see ${log}`);
    this.logins = n;
    say(`auth login #${n} done (grant "${grant}" stored in the Kafka token store)`);
  }

  /** Watches the connectors' logs until the run stops its background work, then waits for a login under way. */
  async loop(): Promise<void> {
    const { say, stopped } = this.settings;
    while (!stopped()) {
      const lost = new Set<string>();
      for (const logFile of this.settings.connectorLogs()) {
        const from = this.logRead.get(logFile) ?? 0;
        const added = await readFrom(logFile, from);
        const end = added.lastIndexOf('\n') + 1;
        if (end === 0) continue;
        this.logRead.set(logFile, from + end);
        for (const grant of revokedGrants(added.subarray(0, end).toString('utf8'))) lost.add(grant);
      }
      for (const grant of GRANTS.filter((g) => lost.has(g)))
        if (Date.now() - (this.lastLoginAt.get(grant) ?? 0) > 30_000) {
          this.lastLoginAt.set(grant, Date.now());
          say(`grant "${grant}" is lost (AUTH_GRANT_REVOKED in the log): the operator runs auth login`);
          this.pending = this.pending
            .then(() => this.authorize(grant))
            .catch((error: unknown) => say(`operator login failed: ${String(error)}`));
        }
      await sleep(1000);
    }
    await this.pending;
  }
}

/** The bytes of `file` from `position` on (none when it cannot be read). */
async function readFrom(file: string, position: number): Promise<Buffer> {
  const handle = await open(file, 'r').catch(() => null);
  if (handle === null) return Buffer.alloc(0);
  try {
    const { size } = await handle.stat();
    if (size <= position) return Buffer.alloc(0);
    const buffer = Buffer.alloc(size - position);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}
