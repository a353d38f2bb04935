/**
 * One chaos run: its own stack, the sandbox and the connector as separate processes of the built CLI, live
 * changes throughout, the fault schedule of the seed, then settle, check and report.
 *
 * The driver plays the operator and the supervisor (systemd's Restart=always, a Deployment's restarts): it
 * restarts a connector that exits, runs `auth login` when a grant is lost, and does rolling restarts. It
 * never tells the connector anything else. Everything it starts is stopped at the end, even on failure.
 *
 * Single mode runs one instance (connector.mode single) and starts a replacement for each process fault;
 * `--distributed` runs several instances of one name (instances.ts supervises them) whose process faults hit
 * a random one, with distributed mode's own SIGSTOP and rolling restart in distributed.ts.
 */
import { randomBytes } from 'node:crypto';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { stringify } from 'yaml';
import { check, type CheckResult } from './checker.js';
import {
  GRANTS,
  historyProgress,
  limitBelowLiveDemand,
  locationsByGrant,
  revokedGrants,
  staleLocations,
  type GrantName,
  type OffsetReading,
  type OffsetView,
} from './fault-checks.js';
import type { TruthCall } from './judge.js';
import {
  awaitOwnership,
  distributedRollingRestart,
  distributedSigstop,
  finalOwnership,
  OWNERSHIP_CAP_MS,
  type DistributedDriver,
} from './distributed.js';
import { runHostileCases, type HostileOutcome } from './hostile.js';
import { Fleet, offsetsPartitionOf, type SlotFacts } from './instances.js';
import { lastStableOffsets } from './last-stable-offsets.js';
import { probeTopic } from './progress-probe.js';
import { witnessPython } from './witness.js';
import { cliPath, closingLine, LoggedProcess, runToEnd, sleep, until, type Exit } from './processes.js';
import { seededRandom, type Random } from './random.js';
import { SandboxAdmin } from './sandbox-admin.js';
import {
  planFaults,
  PROCESS_FAULTS,
  TIMEOUTS,
  type FaultKind,
  type PlannedFault,
  type Profile,
} from './schedule.js';
import { ChaosStack, type StackEndpoints } from './stack.js';

export interface ChaosOptions {
  seed: number;
  profile: Profile;
  exactlyOnce: boolean;
  runDir: string;
  keepStack: boolean;
  /** Only the hostile-bodies phase (no sandbox, no faults, no checker). */
  hostileOnly: boolean;
  /** connector.mode: distributed with `instances` processes; single mode runs one (instances = 1). */
  distributed: boolean;
  instances: number;
}

export interface FaultOutcome {
  kind: FaultKind;
  atMs: number;
  /** Time from the end of the fault to the next committed progress; null = none within the cap. */
  recoveryMs: number | null;
  /**
   * Distributed mode, process faults: from the fault's start to ownership whole again among the instances
   * (every partition and location with exactly one owner); null = not within the cap. Absent otherwise.
   */
  handoverMs?: number | null;
  detail: string;
}

export interface RunSummary {
  seed: number;
  profile: Profile['name'];
  /** The planned fault phase (`--minutes`; a full run's 15 min unless shortened). */
  faultPhaseMs: number;
  mode: 'single' | 'distributed';
  /** Instances running at once (1 in single mode, outside rolling restarts and SIGSTOP replacements). */
  instances: number;
  exactlyOnce: boolean;
  locations: number;
  initialCalls: number;
  liveUpdates: number;
  liveCreates: number;
  faults: FaultOutcome[];
  killsInsideTransaction: number;
  killsBetweenRefreshAndStorage: number;
  connectorStarts: number;
  unexpectedExits: { instance: string; code: number | null; signal: string | null; tail: string }[];
  crashLoops: number;
  operatorLogins: number;
  fencedInstanceOutcomes: string[];
  rollingRestartOutcomes: string[];
  /**
   * What issue 32's faults showed, one line each: the standby's takeover once the replacement stopped, the
   * other grant's freshness during a spent quota and the held one's resumption, history under a hidden limit.
   */
  faultChecks: string[];
  settled: boolean;
  settleMs: number;
  finalExit: string;
  peakRssBytes: number;
  /** Per instance slot: processes run, kills, SIGSTOPs, unexpected exits, peak RSS, final ownership. */
  slots: SlotFacts[];
  /** Distributed mode: ownership at the end (whole, or what was wrong). */
  finalOwnership: string;
  durationMs: number;
  check: CheckResult | null;
  /** Hostile API bodies, one connector process each (tools/chaos/hostile.ts). */
  hostile: HostileOutcome[];
  violations: string[];
}

const PORTS = { sandbox: 21443, callback: 21476, metricsBase: 21410, metricsCount: 30 } as const;
// Names of their own per run, so that a stack kept from an earlier run (--keep-stack) holds nothing of this one.
const RUN_ID = `${Date.now().toString(36)}`;
const TOPICS = {
  calls: `chaos-${RUN_ID}-calls`,
  offsets: `chaos-${RUN_ID}-offsets`,
  dlq: `chaos-${RUN_ID}-dlq`,
  tokens: `chaos-${RUN_ID}-tokens`,
} as const;
const CONNECTOR_NAME = `chaos-${RUN_ID}`;
const RECOVERY_CAP_MS = 240_000;
const TOKEN_LIFETIME_MS = 10 * 3600_000;

/** Faults the sandbox applies in the background during the fault phase (a flaky but working API). */
function backgroundFaults(seed: number): Record<string, unknown> {
  return {
    seed,
    latency: { medianMs: 3, p99Ms: 60 },
    rateLimitRate: 0.01,
    retryAfterSeconds: 1,
    serverErrorRate: 0.005,
    dropConnectionRate: 0.001,
    malformedJsonRate: 0.001,
  };
}

const NO_FAULTS = {
  latency: null,
  rateLimitRate: 0,
  serverErrorRate: 0,
  dropConnectionRate: 0,
  malformedJsonRate: 0,
  accessTokenEarlyExpiryRate: 0,
  refreshTokenRevocationRate: 0,
  cursorTtlMs: 24 * 3600_000,
  cursorRejection: null,
  cursorRejectionRate: 0,
  singleCallFailures: [],
  singleCallVersionSkewRate: 0,
  errorBody: null,
  rateLimit: null,
  grantQuotaSpent: null,
} as const;

/** How long the connector polls each location (poll.intervalMs of the chaos config). */
const POLL_INTERVAL_MS = 2000;
/** A grant's spent quota, as the sandbox announces it: 15 minutes (the hold itself is the fault's duration). */
const QUOTA_RETRY_AFTER_SECONDS = 900;
/** How long after its live change a location must have committed a page (a poll, its enrichment, a commit). */
const FRESH_LEAD_MS = 10_000;
/** How long a held grant's locations, or a standby taking over, may take once the fault ends. */
const RESUME_CAP_MS = 120_000;

/** Answers of other APIs' shapes, none of which the connector's configuration names. */
const CURSOR_REFUSALS = [
  {
    status: 400,
    body: '{"errors":[{"detail":"pagination token is stale"}]}',
    contentType: 'application/json',
  },
  { status: 422, body: 'Pagination token is stale', contentType: 'text/plain' },
  { status: 404, body: '<html><body><h1>Not Found</h1></body></html>', contentType: 'text/html' },
  { status: 409, body: '{"message":"cursor no longer valid","code":12}', contentType: 'application/json' },
] as const;

const GATEWAY_ERRORS = [
  { body: '<html><body><h1>502 Bad Gateway</h1><hr>nginx</body></html>', contentType: 'text/html' },
  { body: 'upstream connect error or disconnect/reset before headers', contentType: 'text/plain' },
] as const;

const HTML_503 = {
  status: 503,
  body: '<html><body>503 Service Unavailable</body></html>',
  contentType: 'text/html',
};

/** The sandbox settings of one API fault window. */
function apiFaultSettings(kind: FaultKind, random: Random): Record<string, unknown> {
  switch (kind) {
    case 'api-latency':
      return { latency: { medianMs: random.int(100, 400), p99Ms: random.int(2000, 6000) } };
    case 'api-429-storm':
      return { rateLimitRate: random.between(0.5, 0.9), retryAfterSeconds: random.int(1, 3) };
    case 'api-5xx':
      return { serverErrorRate: random.between(0.3, 0.6) };
    case 'api-dropped-connections':
      return { dropConnectionRate: random.between(0.1, 0.3) };
    case 'api-malformed-bodies':
      return { malformedJsonRate: random.between(0.05, 0.2) };
    case 'api-non-json-errors':
      // 5xx and 429 of a gateway in front of the API: HTML or plain text, not the API's JSON.
      return {
        serverErrorRate: random.between(0.2, 0.4),
        rateLimitRate: random.between(0.05, 0.2),
        errorBody: random.pick(GATEWAY_ERRORS),
        singleCallFailures: [
          { rate: 0.3, attempts: 2, answer: HTML_503 },
          { rate: 0.1, attempts: 1, answer: { status: 200, body: 'OK', contentType: 'text/plain' } },
        ],
      };
    case 'api-cursor-rejected':
      // Expired cursors, answered with a status and body no configuration names.
      return {
        cursorTtlMs: random.int(1, 200),
        cursorRejection: random.pick(CURSOR_REFUSALS),
        cursorRejectionRate: random.between(0.2, 0.5),
      };
    case 'api-token-expiry':
      return { accessTokenEarlyExpiryRate: random.between(0.02, 0.08) };
    case 'api-single-call-failures':
      return {
        singleCallFailures: [
          { rate: random.between(0.1, 0.3), attempts: random.int(1, 3), answer: HTML_503 },
          // A per-call refusal: published unenriched, the number redacted (never lost).
          {
            rate: 0.03,
            attempts: 0,
            answer: { status: 404, body: '{"error":"gone"}', contentType: 'application/json' },
          },
        ],
      };
    case 'api-single-call-newer-version':
      return { singleCallVersionSkewRate: random.between(0.05, 0.2) };
    default:
      return {};
  }
}

/** JSON.stringify replacer for event lines: rates to two decimals, long bodies cut. */
function brief(_key: string, value: unknown): unknown {
  if (typeof value === 'number' && !Number.isInteger(value)) return Number(value.toFixed(2));
  if (typeof value === 'string' && value.length > 40) return `${value.slice(0, 37)}...`;
  return value;
}

export class ChaosRun {
  private readonly stack = new ChaosStack();
  private endpoints!: StackEndpoints;
  private sandbox: LoggedProcess | null = null;
  private admin!: SandboxAdmin;
  private locations: string[] = [];
  private grantLocations: Record<GrantName, string[]> = { default: [], second: [] };
  /** The connector processes: one slot in single mode, `instances` in distributed mode. */
  private readonly fleet: Fleet;
  private readonly secrets = {
    clientSecret: randomBytes(24).toString('base64url'),
    storeKey: randomBytes(32),
  };
  private readonly historyFile: string;
  private readonly logDir: string;
  private readonly started = Date.now();
  private phaseStart = 0;
  private lastProgressAt = 0;
  private progressTotal = -1n;
  private stopBackground = false;
  private settling = false;
  private readonly recentExits: number[] = [];
  private liveCurrent = new Map<string, { locationUid: string; isPrivate: boolean }>();
  /** When each location had live changes (epoch ms): which locations a fault's freshness check expects to move. */
  private readonly changedAt = new Map<string, number[]>();
  private offsetPartitions: number[] = [];
  /** The live-change writer; settling waits for its last change before reading the truth. */
  private live: Promise<void> = Promise.resolve();
  private readonly summary: RunSummary;

  constructor(private readonly options: ChaosOptions) {
    this.historyFile = join(options.runDir, 'history.jsonl');
    this.logDir = join(options.runDir, 'logs');
    mkdirSync(this.logDir, { recursive: true });
    this.fleet = new Fleet({
      size: options.distributed ? options.instances : 1,
      portBase: PORTS.metricsBase,
      portCount: PORTS.metricsCount,
      configFile: (n, port) => this.configFile(n, port),
      logFile: (name) => join(this.logDir, `${name}.log`),
      env: () => this.env,
      stopping: () => this.stopBackground || this.tornDown !== null,
      onUnexpectedExit: (instance, slot, exit) => this.onUnexpectedExit(instance, slot, exit),
    });
    this.summary = {
      seed: options.seed,
      profile: options.profile.name,
      faultPhaseMs: options.profile.faultPhaseMs,
      mode: options.distributed ? 'distributed' : 'single',
      instances: options.distributed ? options.instances : 1,
      exactlyOnce: options.exactlyOnce,
      locations: options.profile.locations,
      initialCalls: 0,
      liveUpdates: 0,
      liveCreates: 0,
      faults: [],
      killsInsideTransaction: 0,
      killsBetweenRefreshAndStorage: 0,
      connectorStarts: 0,
      unexpectedExits: [],
      crashLoops: 0,
      operatorLogins: 0,
      fencedInstanceOutcomes: [],
      rollingRestartOutcomes: [],
      faultChecks: [],
      settled: false,
      settleMs: 0,
      finalExit: '',
      peakRssBytes: 0,
      slots: [],
      finalOwnership: '',
      durationMs: 0,
      check: null,
      hostile: [],
      violations: [],
    };
  }

  private say(message: string): void {
    const t = Math.round((Date.now() - this.started) / 1000);
    const line = `[chaos ${String(Math.floor(t / 60)).padStart(2, '0')}:${String(t % 60).padStart(2, '0')}] ${message}`;
    process.stdout.write(`${line}\n`);
    appendFileSync(join(this.options.runDir, 'events.log'), `${line}\n`);
  }

  private get env(): NodeJS.ProcessEnv {
    return {
      ...process.env,
      CHAOS_CLIENT_SECRET: this.secrets.clientSecret,
      CHAOS_TOKEN_KEY: this.secrets.storeKey.toString('base64'),
      FORCE_COLOR: '0',
    };
  }

  /** Ctrl-C: stop everything the run started, then exit 130. */
  abort(): void {
    this.stopBackground = true;
    void this.teardown().finally(() => process.exit(130));
  }

  // ---------- set-up ----------

  async run(): Promise<RunSummary> {
    const { profile, seed } = this.options;
    const random = seededRandom(seed);
    const plan = planFaults(random.fork(), profile);
    const liveRandom = random.fork();
    this.say(
      `seed ${seed}, profile ${profile.name}: ${profile.locations} locations x ${profile.callsPerLocation} calls, ` +
        `${plan.length} faults over ${Math.round(profile.faultPhaseMs / 60_000)} min, ` +
        `${this.summary.mode} mode (${this.summary.instances} instance${this.summary.instances > 1 ? 's' : ''}), ` +
        `${this.options.exactlyOnce ? 'exactly-once' : 'at-least-once'}; run folder ${this.options.runDir}`,
    );
    try {
      this.say('starting the chaos stack (Kafka + registry on 21492 / 21481)');
      this.endpoints = await this.stack.up();
      if (this.options.hostileOnly) await this.hostileBodies();
      else await this.faultsAndCheck(plan, liveRandom);
    } catch (error) {
      this.summary.violations.push(`the run failed: ${(error as Error).stack ?? String(error)}`);
      this.say(`run failed: ${(error as Error).message}`);
    } finally {
      this.stopBackground = true;
      await this.teardown();
    }
    this.summary.durationMs = Date.now() - this.started;
    this.summary.peakRssBytes = Math.max(0, ...this.fleet.all.map((i) => i.peakRssBytes));
    for (const instance of this.fleet.all) {
      const fact = this.fleet.fact(instance);
      fact.peakRssBytes = Math.max(fact.peakRssBytes, instance.peakRssBytes);
    }
    this.summary.slots = this.fleet.facts;
    this.summary.connectorStarts = this.fleet.all.length;
    return this.summary;
  }

  /** The chaos run proper: sandbox, authorization, connector, faults, settle, checker, hostile bodies. */
  private async faultsAndCheck(plan: PlannedFault[], liveRandom: Random): Promise<void> {
    const { seed } = this.options;
    // The checker's witness must be there before the faults, not found missing after them.
    this.say(`checker's witness: ${witnessPython()} (librdkafka)`);
    await this.startSandbox();
    await this.snapshotTruth();
    for (const grant of GRANTS) await this.authorize(grant);
    for (let slot = 0; slot < this.fleet.size; slot++) this.fleet.start(slot);
    this.live = this.liveLoop(liveRandom);
    const background = [this.progressLoop(), this.live, this.operatorLoop()];
    if (!(await until(() => this.lastProgressAt > 0, 300_000, 500)))
      throw new Error(`the connector committed no page within 5 minutes; see ${this.logDir}`);
    this.say('first page committed; fault phase begins');
    await this.admin.call('PUT', 'faults', backgroundFaults(seed));
    this.phaseStart = Date.now();
    for (const fault of plan) {
      const wait = this.phaseStart + fault.atMs - Date.now();
      if (wait > 0) await sleep(wait);
      await this.inject(fault, seededRandom(fault.seed));
    }
    await this.settle();
    this.stopBackground = true;
    await Promise.all(background);
    await this.runChecker();
    if (this.options.profile.hostileBodies) await this.hostileBodies();
  }

  private async hostileBodies(): Promise<void> {
    this.say('hostile API bodies: one connector process per case');
    this.summary.hostile = await runHostileCases({
      ...this.endpoints,
      runDir: this.options.runDir,
      runId: RUN_ID,
      metricsPort: PORTS.metricsBase + 40,
      caseMs: this.options.profile.hostileCaseMs,
      say: (message) => this.say(message),
    });
    for (const h of this.summary.hostile.filter((o) => !o.passed))
      this.summary.violations.push(`hostile body "${h.name}": ${h.exit}${h.detail ? `, ${h.detail}` : ''}`);
  }

  private async startSandbox(): Promise<void> {
    const { profile, seed, runDir } = this.options;
    const caFile = join(runDir, 'sandbox-ca.pem');
    this.sandbox = new LoggedProcess(
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
      join(this.logDir, 'sandbox.log'),
      { ...process.env, SANDBOX_CLIENT_SECRET: this.secrets.clientSecret },
    );
    const baseUrl = `https://127.0.0.1:${PORTS.sandbox}`;
    // The CA file is written while the sandbox starts: a client is kept only once a call through it succeeded.
    const up = await until(async () => {
      if (!this.sandbox?.running) throw new Error('sandbox exited');
      const admin = await SandboxAdmin.open(baseUrl, caFile);
      try {
        await admin.call('GET', 'clock');
      } catch (error) {
        await admin.close();
        throw error;
      }
      this.admin = admin;
      return true;
    }, 120_000);
    if (!up) throw new Error(`the sandbox did not start; see ${this.sandbox.logFile}`);
    this.locations = (await this.admin.call<{ data: string[] }>('GET', 'locations')).data;
    this.grantLocations = locationsByGrant(this.locations);
    this.say(`sandbox up on ${baseUrl} (${this.locations.length} locations)`);
  }

  /** Every version the sandbox holds before the connector starts: the first lines of the history. */
  private async snapshotTruth(): Promise<void> {
    writeFileSync(this.historyFile, '');
    for (const location of this.locations) {
      const { data } = await this.admin.call<{ data: TruthCall[] }>(
        'GET',
        `truth?locationUid=${encodeURIComponent(location)}`,
      );
      appendFileSync(this.historyFile, data.map((c) => `${JSON.stringify(c)}\n`).join(''));
      for (const c of data) this.liveCurrent.set(c.uid, { locationUid: location, isPrivate: c.isPrivate });
      this.summary.initialCalls += data.length;
    }
    this.say(`truth snapshot: ${this.summary.initialCalls} listable calls`);
  }

  /** The config of process number `instance` (0: `auth login`), with its own metrics port. */
  private configFile(instance: number, metricsPort = PORTS.metricsBase + 39): string {
    const file = join(this.options.runDir, `connector-${instance}.yaml`);
    const document = {
      connector: { name: CONNECTOR_NAME, mode: this.summary.mode },
      api: {
        baseUrl: `https://127.0.0.1:${PORTS.sandbox}`,
        caFile: join(this.options.runDir, 'sandbox-ca.pem'),
        pageSize: 100,
        requestsPerSecond: 1500,
        maxConcurrency: 32,
        enrichConcurrency: 16,
        requestTimeoutMs: 10_000,
        retry: {
          maxAttempts: 8,
          initialDelayMs: 100,
          maxDelayMs: 5000,
          maxRetryAfterMs: TIMEOUTS.maxRetryAfterMs,
        },
      },
      oauth: {
        clientId: 'chaos-client',
        clientSecret: '${CHAOS_CLIENT_SECRET}',
        redirectUri: `https://127.0.0.1:${PORTS.callback}/callback`,
        store: { type: 'kafka', topic: TOPICS.tokens },
        keyEnv: 'CHAOS_TOKEN_KEY',
      },
      // Two grants divide the locations, so that one grant's quota can be spent while the other goes on.
      sources: GRANTS.map((grant) => ({ grant, locations: this.grantLocations[grant] })),
      kafka: {
        brokers: [this.endpoints.brokers],
        topic: TOPICS.calls,
        offsetsTopic: TOPICS.offsets,
        dlqTopic: TOPICS.dlq,
        exactlyOnce: this.options.exactlyOnce,
        createTopics: true,
        topicPartitions: 6,
        transactionTimeoutMs: TIMEOUTS.transactionMs,
        // Distributed mode: 6 partitions share the locations among the instances; a short session timeout
        // moves a dead or paused instance's partitions after 10 s.
        ...(this.options.distributed && {
          offsetsTopicPartitions: 6,
          groupSessionTimeoutMs: TIMEOUTS.sessionMs,
          groupHeartbeatIntervalMs: 1000,
        }),
      },
      schemaRegistry: { url: this.endpoints.registryUrl },
      poll: {
        intervalMs: POLL_INTERVAL_MS,
        maxLocationsInFlight: 16,
        shutdownTimeoutMs: 10_000,
        ...(this.options.profile.stoppedRetryInitialDelayMs !== undefined && {
          stoppedRetry: { initialDelayMs: this.options.profile.stoppedRetryInitialDelayMs },
        }),
      },
      metrics: { host: '127.0.0.1', port: metricsPort, perLocationLabels: false },
      // CHAOS_LOG_LEVEL=debug keeps every traversal's start and page in the run folder's logs (to replay a seed).
      logging: { level: process.env.CHAOS_LOG_LEVEL === 'debug' ? 'debug' : 'info', format: 'json' },
    };
    writeFileSync(file, stringify(document));
    return file;
  }

  /** `auth login` as an operator runs it, with the driver as the browser (the sandbox user auto-approves). */
  private async authorize(grant: GrantName): Promise<void> {
    const n = this.summary.operatorLogins + 1;
    const log = join(this.logDir, `auth-login-${n}.log`);
    let followed = false;
    const result = await runToEnd(
      [
        cliPath,
        'auth',
        'login',
        '--config',
        this.configFile(0),
        '--grant',
        grant,
        '--no-open',
        '--timeout',
        '60',
      ],
      this.env,
      (stdout) => {
        const url = /https:\/\/127\.0\.0\.1:\d+\/oauth\/authorize\?\S+/.exec(stdout)?.[0];
        if (url === undefined || followed) return;
        followed = true;
        void (async () => {
          const callback = await this.admin.follow(url, false);
          if (callback !== null) await this.admin.follow(callback, true);
        })().catch((error: unknown) => this.say(`scripted browser failed: ${String(error)}`));
      },
    );
    writeFileSync(log, `${result.stdout}\n${result.stderr}`);
    if (result.code !== 0) throw new Error(`auth login exited ${result.code}; see ${log}`);
    this.summary.operatorLogins = n;
    this.say(`auth login #${n} done (grant "${grant}" stored in the Kafka token store)`);
  }

  // ---------- connector instances ----------

  /**
   * The supervisor's record of an exit the driver did not cause (the fleet restarts the slot after the delay
   * answered). In distributed mode every such exit is a violation: no instance may exit with an error other
   * than the faults' own kills (a woken instance rejoins, a fenced one drops its partitions).
   */
  private onUnexpectedExit(instance: LoggedProcess, slot: string, exit: Exit): number {
    const { code, signal } = exit;
    const tail = instance.tail(8);
    this.summary.unexpectedExits.push({ instance: `${slot} (${instance.name})`, code, signal, tail });
    const now = Date.now();
    this.recentExits.push(now);
    const inLastMinute = this.recentExits.filter((t) => now - t < 60_000).length;
    // Five exits within a minute: a crash loop (counted once per exit while it lasts).
    if (inLastMinute >= 5) this.summary.crashLoops++;
    this.say(
      `${slot} (${instance.name}) exited unexpectedly (code ${code}, ${signal ?? 'no signal'}); restarting`,
    );
    if (this.options.distributed)
      this.summary.violations.push(
        `${slot} (${instance.name}) exited unexpectedly (code ${code}, ${signal ?? 'no signal'}): ${closingLine(tail)}`,
      );
    return inLastMinute >= 5 ? 10_000 : 1000;
  }

  /** The instance a process fault hits: the running one in single mode, a random one in distributed mode. */
  private victim(random: Random): LoggedProcess {
    return this.fleet.running(this.options.distributed ? random.int(0, this.fleet.size - 1) : 0);
  }

  /** kill -9 (counted for its slot). */
  private async kill9(instance: LoggedProcess): Promise<void> {
    this.fleet.fact(instance).kills++;
    await this.fleet.kill9(instance);
  }

  /** A new process for the victim's slot (the supervisor's restart after a kill). */
  private restart(victim: LoggedProcess): LoggedProcess {
    return this.fleet.start(this.fleet.slotIndex(victim));
  }

  private get driver(): DistributedDriver {
    return {
      fleet: this.fleet,
      partitionOf: () => this.partitionOf(),
      violation: (message) => this.summary.violations.push(message),
    };
  }

  private partitionMap: Map<string, number> | null = null;

  /** Every configured location's partition of the offsets topic (Kafka's default partitioner on its key). */
  private async partitionOf(): Promise<ReadonlyMap<string, number>> {
    if (this.partitionMap === null) {
      const count = (await this.partitionsOf(TOPICS.offsets)).length;
      this.partitionMap = new Map(
        this.locations.map((l) => [l, offsetsPartitionOf(`${CONNECTOR_NAME}/${l}`, count)] as const),
      );
    }
    return this.partitionMap;
  }

  // ---------- observation ----------

  private async partitionsOf(topic: string): Promise<number[]> {
    const kafka = new Kafka({
      clientId: 'calls-chaos-driver',
      brokers: [this.endpoints.brokers],
      logLevel: logLevel.NOTHING,
    });
    const admin = kafka.admin();
    await admin.connect();
    try {
      return (await admin.fetchTopicOffsets(topic)).map((p) => p.partition);
    } finally {
      await admin.disconnect();
    }
  }

  /** Committed progress: the last stable offsets of the offsets topic, polled every 250 ms. */
  private async progressLoop(): Promise<void> {
    while (!this.stopBackground) {
      try {
        if (this.offsetPartitions.length === 0)
          this.offsetPartitions = await this.partitionsOf(TOPICS.offsets);
        const offsets = await lastStableOffsets(
          this.endpoints.brokers,
          TOPICS.offsets,
          this.offsetPartitions,
        );
        const total = offsets.reduce((sum, p) => sum + p.lastStable, 0n);
        if (this.progressTotal >= 0n && total > this.progressTotal) this.lastProgressAt = Date.now();
        this.progressTotal = total;
      } catch {
        /* broker down or topic not yet created */
      }
      await sleep(250);
    }
  }

  private async waitForProgress(after: number, capMs = RECOVERY_CAP_MS): Promise<number | null> {
    const ok = await until(() => this.lastProgressAt > after, capMs, 100);
    return ok ? this.lastProgressAt - after : null;
  }

  /** After a kill -9 nothing writes: a last stable offset below the high watermark is an open transaction. */
  private async openTransaction(): Promise<boolean> {
    for (const topic of [TOPICS.calls, TOPICS.offsets]) {
      const partitions = topic === TOPICS.offsets ? this.offsetPartitions : await this.partitionsOf(topic);
      const offsets = await lastStableOffsets(this.endpoints.brokers, topic, partitions);
      if (offsets.some((p) => p.lastStable < p.high)) return true;
    }
    return false;
  }

  private callsPartitions: number[] = [];

  private async transactionOpenNow(): Promise<boolean> {
    if (this.callsPartitions.length === 0) this.callsPartitions = await this.partitionsOf(TOPICS.calls);
    const offsets = await lastStableOffsets(this.endpoints.brokers, TOPICS.calls, this.callsPartitions);
    return offsets.some((p) => p.lastStable < p.high);
  }

  private async tokensWritten(): Promise<bigint> {
    const partitions = await this.partitionsOf(TOPICS.tokens);
    const offsets = await lastStableOffsets(this.endpoints.brokers, TOPICS.tokens, partitions);
    return offsets.reduce((sum, p) => sum + p.high, 0n);
  }

  /** How much of each instance's log the operator has read (the AUTH_GRANT_REVOKED pages it acted on). */
  private readonly logRead = new Map<string, number>();
  private readonly lastLoginAt = new Map<GrantName, number>();
  private logins: Promise<void> = Promise.resolve();

  /**
   * The operator, paged by AUTH_GRANT_REVOKED (a kill between a refresh and its storage, with rotated refresh
   * tokens): runs `auth login` for each grant an instance's log says was lost, at most once per 30 s per grant
   * (the other instances of a shared grant say so too). Watching every log all along, not only after a fault,
   * since the other grant's progress does not tell whether one was lost.
   */
  private async operatorLoop(): Promise<void> {
    while (!this.stopBackground) {
      const lost = new Set<string>();
      for (const instance of this.fleet.all) {
        const from = this.logRead.get(instance.logFile) ?? 0;
        const added = await readFrom(instance.logFile, from);
        const end = added.lastIndexOf('\n') + 1;
        if (end === 0) continue;
        this.logRead.set(instance.logFile, from + end);
        for (const grant of revokedGrants(added.subarray(0, end).toString('utf8'))) lost.add(grant);
      }
      for (const grant of GRANTS.filter((g) => lost.has(g)))
        if (Date.now() - (this.lastLoginAt.get(grant) ?? 0) > 30_000) {
          this.lastLoginAt.set(grant, Date.now());
          this.say(`grant "${grant}" is lost (AUTH_GRANT_REVOKED in the log): the operator runs auth login`);
          this.logins = this.logins
            .then(() => this.authorize(grant))
            .catch((error: unknown) => this.say(`operator login failed: ${String(error)}`));
        }
      await sleep(1000);
    }
    await this.logins;
  }

  /** Recovery: the next committed page after `after` (the operator loop logs in again should a grant be lost). */
  private async recover(after: number): Promise<number | null> {
    return this.waitForProgress(after, RECOVERY_CAP_MS);
  }

  // ---------- live changes ----------

  private async liveLoop(random: Random): Promise<void> {
    const { liveUpdatesPerSecond: ups, liveCreatesPerSecond: cps } = this.options.profile;
    let updateDebt = 0;
    let createDebt = 0;
    let last = Date.now();
    const uids = [...this.liveCurrent.keys()];
    while (!this.stopBackground && !this.settling) {
      await sleep(200);
      const now = Date.now();
      updateDebt += ((now - last) / 1000) * ups;
      createDebt += ((now - last) / 1000) * cps;
      last = now;
      try {
        for (; updateDebt >= 1 && !this.settling; updateDebt--) {
          const uid = random.pick(uids);
          const current = this.liveCurrent.get(uid);
          const change = random.pick(['privacy', 'number', 'conversation', 'touch'] as const);
          const body: Record<string, unknown> = { uid };
          if (change === 'privacy') body.isPrivate = !(current?.isPrivate ?? false);
          if (change === 'number')
            body.customerPhoneNumber = `+1555${String(random.int(0, 9_999_999)).padStart(7, '0')}`;
          if (change === 'conversation')
            body.conversationUid = random.chance(0.2) ? null : randomUuid(random);
          this.record((await this.admin.call<{ data: TruthCall }>('POST', 'calls', body)).data);
          this.summary.liveUpdates++;
        }
        for (; createDebt >= 1 && !this.settling; createDebt--) {
          const locationUid = random.pick(this.locations);
          const kind = random.next();
          const body: Record<string, unknown> = {
            locationUid,
            uid: randomUuid(random),
            customerPhoneNumber: `+1555${String(random.int(0, 9_999_999)).padStart(7, '0')}`,
            isPrivate: random.chance(0.3),
            conversationUid: randomUuid(random),
            ...(kind < 0.05 ? { thirdParty: true } : kind < 0.08 ? { representable: false } : {}),
          };
          const created = (await this.admin.call<{ data: TruthCall }>('POST', 'calls', body)).data;
          if (kind >= 0.08) {
            this.record(created);
            uids.push(created.uid);
          }
          this.summary.liveCreates++;
        }
      } catch (error) {
        this.say(`live change failed: ${String(error)}`);
      }
    }
  }

  private record(call: TruthCall): void {
    this.liveCurrent.set(call.uid, { locationUid: call.locationUid, isPrivate: call.isPrivate });
    if (!this.settling) {
      const times = this.changedAt.get(call.locationUid) ?? [];
      times.push(Date.now());
      this.changedAt.set(call.locationUid, times);
    }
    appendFileSync(this.historyFile, `${JSON.stringify(call)}\n`);
  }

  // ---------- faults ----------

  private async inject(fault: PlannedFault, random: Random): Promise<void> {
    const outcome: FaultOutcome = {
      kind: fault.kind,
      atMs: Date.now() - this.phaseStart,
      recoveryMs: null,
      detail: '',
    };
    try {
      const started = Date.now();
      const end = await this.apply(fault, random, outcome);
      outcome.recoveryMs = await this.recover(end);
      if (this.options.distributed && isProcessFault(fault.kind) && outcome.handoverMs === undefined) {
        const whole = await awaitOwnership(this.driver, () => this.fleet.currentRunning(), OWNERSHIP_CAP_MS);
        outcome.handoverMs = whole.at === null ? null : whole.at - started;
        if (whole.at === null)
          outcome.detail += `; ownership not whole: ${whole.problems.slice(0, 3).join('; ')}`;
      }
    } catch (error) {
      outcome.detail += ` (driver error: ${(error as Error).message})`;
    }
    this.summary.faults.push(outcome);
    const recovered =
      outcome.recoveryMs === null
        ? 'NO progress within the cap'
        : `progress after ${(outcome.recoveryMs / 1000).toFixed(1)} s`;
    const handover =
      outcome.handoverMs === undefined
        ? ''
        : outcome.handoverMs === null
          ? '; ownership NOT whole within the cap'
          : `; ownership whole ${(outcome.handoverMs / 1000).toFixed(1)} s after the fault began`;
    this.say(`${fault.kind}: ${outcome.detail}; ${recovered}${handover}`);
  }

  /** Applies one fault; resolves with the moment it ended (the reference of the recovery time). */
  private async apply(fault: PlannedFault, random: Random, outcome: FaultOutcome): Promise<number> {
    switch (fault.kind) {
      case 'connector-kill': {
        const victim = this.victim(random);
        // Half the kills are aimed: at a moment the broker shows a transaction open (last stable offset of
        // the calls topic below its high watermark); the others land at a random moment.
        const aimed = random.chance(0.5);
        if (aimed) await until(() => this.transactionOpenNow(), 5000, 10);
        else await sleep(random.int(0, 500));
        await this.kill9(victim);
        // Only single mode can prove it: in distributed mode the other instances keep writing.
        const inside = !this.options.distributed && (await this.openTransaction().catch(() => false));
        if (inside) this.summary.killsInsideTransaction++;
        outcome.detail = `kill -9 ${this.fleet.label(victim)} (${aimed ? 'aimed' : 'random moment'})${inside ? ' inside an open transaction' : ''}`;
        await sleep(fault.durationMs);
        this.restart(victim);
        return Date.now();
      }
      case 'refresh-kill':
        return this.refreshKill(fault, random, outcome);
      case 'broker-kill': {
        await this.stack.killKafka();
        // Half the time the connector restarts while the broker is down (a node rebooted meanwhile).
        const restartConnector = random.chance(0.5);
        const victim = restartConnector ? this.victim(random) : null;
        if (victim !== null) {
          await this.kill9(victim);
          this.restart(victim);
        }
        await sleep(fault.durationMs);
        await this.stack.startKafka();
        outcome.detail = `broker kill -9, restarted after ${(fault.durationMs / 1000).toFixed(1)} s down${victim === null ? '' : `, ${this.fleet.label(victim)} killed and restarted meanwhile`}`;
        return Date.now();
      }
      case 'registry-stop': {
        await this.stack.stopRegistry();
        const restartConnector = random.chance(0.5);
        const victim = restartConnector ? this.victim(random) : null;
        if (victim !== null) {
          await this.kill9(victim);
          this.restart(victim);
        }
        await sleep(fault.durationMs);
        await this.stack.startRegistry();
        outcome.detail = `registry stopped ${(fault.durationMs / 1000).toFixed(1)} s${victim === null ? '' : `, ${this.fleet.label(victim)} killed and restarted meanwhile`}`;
        return Date.now();
      }
      case 'rolling-restart':
        if (this.options.distributed) {
          const { end, handoverMs, text } = await distributedRollingRestart(this.driver);
          this.summary.rollingRestartOutcomes.push(text);
          outcome.detail = `rolling restart of every instance: ${text}`;
          outcome.handoverMs = handoverMs;
          return end;
        }
        return this.rollingRestart(outcome);
      case 'sigstop':
      case 'sigstop-long':
      case 'replacement-stopped':
        if (this.options.distributed) {
          const { end, handoverMs, text } = await distributedSigstop(this.driver, fault, random);
          this.summary.fencedInstanceOutcomes.push(text);
          outcome.detail = `SIGSTOP: ${text}`;
          outcome.handoverMs = handoverMs;
          return end;
        }
        if (fault.kind === 'replacement-stopped') return this.replacementStopped(fault, outcome);
        return this.sigstop(fault, outcome);
      case 'api-grant-quota-spent':
        return this.grantQuotaSpent(fault, outcome);
      case 'api-limit-below-live-demand':
        return this.limitBelowLiveDemand(fault, outcome);
      default: {
        const settings = apiFaultSettings(fault.kind, random);
        await this.admin.call('PUT', 'faults', settings);
        await sleep(fault.durationMs);
        await this.admin.call('PUT', 'faults', { ...NO_FAULTS, ...backgroundFaults(this.options.seed) });
        outcome.detail = `${(fault.durationMs / 1000).toFixed(1)} s of ${JSON.stringify(settings, brief)}`;
        return Date.now();
      }
    }
  }

  /**
   * Expire every access token (sandbox clock + 10 h), wait for the refresh request to reach the token
   * endpoint, and kill -9 at once: with rotated refresh tokens the new one may never be stored.
   */
  private async refreshKill(fault: PlannedFault, random: Random, outcome: FaultOutcome): Promise<number> {
    const victim = this.victim(random);
    const writtenBefore = await this.tokensWritten();
    const stats = async (): Promise<number> =>
      (await this.admin.call<{ data: { tokenRequests: number } }>('GET', 'stats')).data.tokenRequests;
    const before = await stats();
    await this.admin.call('POST', 'clock/advance', { ms: TOKEN_LIFETIME_MS + 60_000 });
    const refreshed = await until(async () => (await stats()) > before, 60_000, 2);
    await sleep(random.int(0, 20));
    await this.kill9(victim);
    const writtenAfter = await this.tokensWritten().catch(() => writtenBefore);
    const between = refreshed && writtenAfter === writtenBefore;
    if (between) this.summary.killsBetweenRefreshAndStorage++;
    // Distributed mode: every instance refreshes; the victim is a random one, the refresh seen may be another's.
    outcome.detail = refreshed
      ? `kill -9 ${this.fleet.label(victim)} right after a refresh request${between ? ', before the new tokens were stored' : ' (tokens already stored)'}`
      : `kill -9 ${this.fleet.label(victim)} (no refresh seen within 60 s)`;
    await sleep(fault.durationMs);
    this.restart(victim);
    return Date.now();
  }

  /** A second instance of the same name while the first runs, then SIGTERM to the first. */
  private async rollingRestart(outcome: FaultOutcome): Promise<number> {
    const old = this.fleet.running(0);
    this.fleet.retire(old);
    const next = this.fleet.start(0);
    const ready = await until(() => this.fleet.ready(next), 120_000, 500);
    old.signal('SIGTERM');
    const exit = await Promise.race([old.exited, sleep(60_000).then(() => null)]);
    if (exit === null) await this.kill9(old);
    const text = `${old.name} ${exit === null ? 'did not exit within 60 s of SIGTERM (killed)' : `exited ${exit.code ?? exit.signal}`}, ${next.name} ${ready ? 'ready' : 'not ready'}`;
    this.summary.rollingRestartOutcomes.push(text);
    outcome.detail = `rolling restart: ${text}`;
    if (exit !== null && exit.code !== 0) this.summary.violations.push(`rolling restart: ${text}`);
    return Date.now();
  }

  /**
   * Single mode: SIGSTOP the running instance and start its replacement (a supervisor's) at once; SIGCONT the
   * paused one after the fault's duration. `tookOver`: the replacement's first progress (null: none in 180 s).
   */
  private async pauseWhileReplaced(
    fault: PlannedFault,
  ): Promise<{ frozen: LoggedProcess; next: LoggedProcess; tookOver: number | null }> {
    const frozen = this.fleet.running(0);
    this.fleet.retire(frozen);
    this.fleet.fact(frozen).sigstops++;
    frozen.signal('SIGSTOP');
    const started = Date.now();
    const next = this.fleet.start(0);
    const tookOver = await this.waitForProgress(started, 180_000);
    await sleep(Math.max(0, fault.durationMs - (Date.now() - started)));
    frozen.signal('SIGCONT');
    return { frozen, next, tookOver };
  }

  /** SIGSTOP the active instance, let a new one take over, SIGCONT the old one: it must be fenced. */
  private async sigstop(fault: PlannedFault, outcome: FaultOutcome): Promise<number> {
    const { frozen, next, tookOver } = await this.pauseWhileReplaced(fault);
    // Woken, it meets the fencing on its next commit and either exits or stands by (/readyz no longer 200);
    // waiting for either, not a fixed 30 s, keeps the short form short. 30 s at most, as before.
    // Only a definite "not ready" counts: an instance too busy to answer has not stood by yet.
    let woke: Exit | null = null;
    void frozen.exited.then((e) => (woke = e));
    await until(
      async () => woke !== null || !(await this.fleet.ready(frozen).catch(() => true)),
      30_000,
      250,
    );
    const exit = woke ?? (await Promise.race([frozen.exited, sleep(1000).then(() => null)]));
    let fate: string;
    if (exit !== null) fate = `exited ${exit.code ?? exit.signal} after SIGCONT`;
    else {
      frozen.signal('SIGTERM');
      const late = await Promise.race([frozen.exited, sleep(30_000).then(() => null)]);
      if (late === null) await this.kill9(frozen);
      fate = `stood by after SIGCONT; SIGTERM → ${late === null ? 'killed' : `exit ${late.code ?? late.signal}`}`;
    }
    // The replacement must still be the writer once the old one woke up and was stopped (issue 20: a paused
    // instance used to fence its replacement back, leaving nothing writing once it was stopped).
    const stillWriting = await until(() => this.fleet.ready(next).catch(() => false), 60_000, 500);
    const text = `${frozen.name} stopped ${Math.round(fault.durationMs / 1000)} s, ${next.name} ${tookOver === null ? 'made NO progress' : 'took over'}, ${frozen.name} ${fate}, ${next.name} ${stillWriting ? 'still writing' : 'NOT writing'}`;
    this.summary.fencedInstanceOutcomes.push(text);
    outcome.detail = `SIGSTOP: ${text}`;
    if (!stillWriting) this.summary.violations.push(`SIGSTOP: ${text}`);
    return Date.now();
  }

  /**
   * Issue 32: SIGSTOP the writer A, start its replacement B (a supervisor's), wake A (it stands by), then stop
   * B, as a blue/green switch rolled back does. A must take over: its /readyz 200 again and pages committed,
   * each within RESUME_CAP_MS of B's exit (the "writes resumed" time of the report).
   */
  private async replacementStopped(fault: PlannedFault, outcome: FaultOutcome): Promise<number> {
    const { frozen: standby, next: replacement, tookOver } = await this.pauseWhileReplaced(fault);
    // Woken, it meets the fencing and stands by (/readyz no longer 200); only a definite "not ready" counts.
    const stoodBy = await until(
      async () => !standby.running || !(await this.fleet.ready(standby).catch(() => true)),
      60_000,
      250,
    );
    const replacementWriting = await until(
      () => this.fleet.ready(replacement).catch(() => false),
      60_000,
      500,
    );
    const head = `${standby.name} stopped ${Math.round(fault.durationMs / 1000)} s, ${replacement.name} ${tookOver === null ? 'made NO progress' : 'took over'}`;
    if (!standby.running || !stoodBy || !replacementWriting) {
      const text = `${head}, ${standby.name} ${standby.running ? (stoodBy ? 'stood by' : 'did NOT stand by within 60 s') : `EXITED ${standby.exit?.code ?? standby.exit?.signal} instead of standing by`}, ${replacement.name} ${replacementWriting ? 'writing' : 'NOT writing'}: the takeover was not tried`;
      this.summary.faultChecks.push(`replacement stopped: ${text}`);
      this.summary.violations.push(`replacement-stopped: ${text}`);
      outcome.detail = `replacement stopped: ${text}`;
      if (standby.running) await this.kill9(standby);
      return Date.now();
    }
    // The standby is the slot's process again: the replacement goes, as a rolled-back switch stops it.
    this.fleet.reinstate(standby);
    this.fleet.retire(replacement);
    replacement.signal('SIGTERM');
    const exit = await Promise.race([replacement.exited, sleep(60_000).then(() => null)]);
    if (exit === null) await this.kill9(replacement);
    const stoppedAt = Date.now();
    const writer = await until(() => this.fleet.ready(standby).catch(() => false), RESUME_CAP_MS, 250);
    const writerMs = writer ? Date.now() - stoppedAt : null;
    const resumedMs = await this.waitForProgress(stoppedAt, RESUME_CAP_MS);
    const text =
      `${head}, ${standby.name} stood by after SIGCONT; ${replacement.name} stopped (${exit === null ? 'killed: no exit within 60 s of SIGTERM' : `exit ${exit.code ?? exit.signal}`}); ` +
      `${standby.name} ${writerMs === null ? 'did NOT take over' : `took over (ready) after ${(writerMs / 1000).toFixed(1)} s`}, ` +
      `writes ${resumedMs === null ? 'did NOT resume' : `resumed after ${(resumedMs / 1000).toFixed(1)} s`}`;
    this.summary.faultChecks.push(`replacement stopped: ${text}`);
    outcome.detail = `replacement stopped: ${text}`;
    if (writerMs === null || resumedMs === null || exit === null || exit.code !== 0)
      this.summary.violations.push(`replacement-stopped: ${text}`);
    return stoppedAt;
  }

  /**
   * Issue 32: the quota of grant `second` spent (429 quota_exhausted, Retry-After 15 min) for the fault's
   * duration while grant `default` goes on. The other grant's locations must stay fresh meanwhile (each with a
   * live change at least FRESH_LEAD_MS before the end committed a page), and the held grant must resume after
   * (one of its locations changed during the hold commits a page within RESUME_CAP_MS of its end).
   */
  private async grantQuotaSpent(fault: PlannedFault, outcome: FaultOutcome): Promise<number> {
    const held = this.grantLocations.second;
    const free = this.grantLocations.default;
    const before = await this.offsetReading();
    const from = Date.now();
    await this.admin.call('PUT', 'faults', {
      grantQuotaSpent: { locations: held, retryAfterSeconds: QUOTA_RETRY_AFTER_SECONDS },
    });
    const refusedBefore = await this.quotaRefusals();
    await sleep(fault.durationMs);
    const during = await this.offsetReading();
    await this.admin.call('PUT', 'faults', { grantQuotaSpent: null });
    const end = Date.now();
    const refused = (await this.quotaRefusals()) - refusedBefore;
    const window = { from, until: end, leadMs: FRESH_LEAD_MS };
    const stale = staleLocations(before, during, free, this.changedAt, window);
    const expected = staleLocations(before, before, free, this.changedAt, window).length;
    // The held grant's locations changed during the hold: once the quota is back the grant must resume (a
    // page of one of them committed); that every one of them catches up is the settle's check.
    const waiting = staleLocations(before, before, held, this.changedAt, window);
    let resumedMs: number | null = null;
    let notResumed = waiting;
    if (waiting.length > 0) {
      await until(
        async () => {
          notResumed = staleLocations(during, await this.offsetReading(), waiting, this.changedAt, window);
          return notResumed.length < waiting.length;
        },
        RESUME_CAP_MS,
        1000,
      );
      if (notResumed.length < waiting.length) resumedMs = Date.now() - end;
    }
    const text =
      `grant "second" (${held.length} locations) held ${(fault.durationMs / 1000).toFixed(0)} s (${refused} requests refused quota_exhausted, Retry-After ${QUOTA_RETRY_AFTER_SECONDS} s); ` +
      `grant "default": ${expected - stale.length} of ${expected} locations with a live change advanced during the hold` +
      (stale.length > 0 ? ` (STALE: ${stale.slice(0, 3).join(', ')})` : '') +
      `; the held grant ${waiting.length === 0 ? 'had no change to resume' : resumedMs === null ? `did NOT resume (${notResumed.length} of ${waiting.length} locations)` : `resumed ${(resumedMs / 1000).toFixed(1)} s after the hold (${waiting.length - notResumed.length} of ${waiting.length} locations changed meanwhile committed by then)`}`;
    this.summary.faultChecks.push(`grant quota spent: ${text}`);
    outcome.detail = text;
    if (stale.length > 0 || (waiting.length > 0 && resumedMs === null) || refused === 0)
      this.summary.violations.push(`api-grant-quota-spent: ${text}`);
    return end;
  }

  /**
   * Issue 32: a hidden limit (no header says it) at half of what the live polls alone need, for the fault's
   * duration. History lanes open at its start must still advance (or merge) by its end; the limit must have
   * refused requests (or it proved nothing); how far the connector stretched its poll interval is reported.
   */
  private async limitBelowLiveDemand(fault: PlannedFault, outcome: FaultOutcome): Promise<number> {
    const rps = limitBelowLiveDemand(this.locations.length, POLL_INTERVAL_MS);
    const before = await this.offsetReading();
    const refusedBefore = await this.rateRefusals();
    await this.admin.call('PUT', 'faults', { rateLimit: { requestsPerSecond: rps, burst: rps } });
    await sleep(fault.durationMs);
    const stretched = await this.effectiveIntervalSeconds();
    const after = await this.offsetReading();
    await this.admin.call('PUT', 'faults', { rateLimit: null });
    const refused = (await this.rateRefusals()) - refusedBefore;
    const history = historyProgress(before, after);
    const text =
      `${rps} requests/s (the live polls alone need ${this.locations.length / (POLL_INTERVAL_MS / 1000)}/s) for ${(fault.durationMs / 1000).toFixed(0)} s, ${refused} requests refused 429; ` +
      (history.open.length === 0
        ? 'no history lane was open (backfill done)'
        : `history lanes advanced: ${history.advanced.length} of ${history.open.length}${history.stuck.length > 0 ? ` (STUCK: ${history.stuck.slice(0, 3).join(', ')})` : ''}`) +
      `; effective poll interval at the end ${stretched === null ? 'not read' : `${stretched.toFixed(1)} s (configured ${POLL_INTERVAL_MS / 1000} s)`}`;
    this.summary.faultChecks.push(`limit below live demand: ${text}`);
    outcome.detail = text;
    // A limit that refused nothing was not below the demand: the fault did not happen.
    if (history.stuck.length > 0 || refused === 0)
      this.summary.violations.push(`api-limit-below-live-demand: ${text}`);
    return Date.now();
  }

  /** Every location's stored offset, read from the offsets topic (read_committed). */
  private async offsetReading(): Promise<OffsetReading> {
    const views = new Map<string, OffsetView>();
    const prefix = `${CONNECTOR_NAME}/`;
    await probeTopic(
      this.endpoints.brokers,
      TOPICS.offsets,
      (m) => {
        const key = m.key?.toString() ?? '';
        if (!key.startsWith(prefix) || m.value === null) return;
        const value = JSON.parse(m.value.toString()) as {
          cursor?: string | null;
          watermark?: string | null;
          history?: unknown;
        };
        const location = key.slice(prefix.length);
        views.set(location, {
          records: (views.get(location)?.records ?? 0) + 1,
          watermark: value.watermark ?? null,
          cursor: value.cursor ?? null,
          history:
            value.history === undefined || value.history === null ? null : JSON.stringify(value.history),
        });
      },
      2000,
    );
    return views;
  }

  private async sandboxFaultStats(): Promise<{ rateLimited: number; quotaExhausted: number }> {
    return (
      await this.admin.call<{ data: { faults: { rateLimited: number; quotaExhausted: number } } }>(
        'GET',
        'stats',
      )
    ).data.faults;
  }

  private async quotaRefusals(): Promise<number> {
    return (await this.sandboxFaultStats()).quotaExhausted;
  }

  private async rateRefusals(): Promise<number> {
    const { rateLimited, quotaExhausted } = await this.sandboxFaultStats();
    return rateLimited - quotaExhausted;
  }

  /** The largest calls_connector_poll_effective_interval_seconds among the running instances (null: none read). */
  private async effectiveIntervalSeconds(): Promise<number | null> {
    const values = await Promise.all(
      this.fleet.currentRunning().map(async (instance) => {
        try {
          const response = await fetch(`http://127.0.0.1:${this.fleet.metricsPort(instance)}/metrics`, {
            signal: AbortSignal.timeout(2000),
          });
          const line = (await response.text())
            .split('\n')
            .find((l) => l.startsWith('calls_connector_poll_effective_interval_seconds '));
          return line === undefined ? null : Number(line.split(' ')[1]);
        } catch {
          return null;
        }
      }),
    );
    const read = values.filter((v): v is number => v !== null && Number.isFinite(v));
    return read.length === 0 ? null : Math.max(...read);
  }

  // ---------- settle, check, tear down ----------

  private async settle(): Promise<void> {
    this.settling = true;
    this.say('fault phase over: faults off, live changes stopped; waiting for the connector to catch up');
    await this.admin.call('PUT', 'faults', NO_FAULTS);
    await this.live;
    const currents = new Set(this.fleet.currentRunning());
    for (const instance of this.fleet.all)
      if (instance.running && !currents.has(instance)) {
        this.fleet.retire(instance);
        instance.signal('SIGTERM');
      }
    for (let slot = 0; slot < this.fleet.size; slot++) this.fleet.running(slot);
    const start = Date.now();
    const newest = new Map<string, number>();
    for (const location of this.locations) {
      const { data } = await this.admin.call<{ data: TruthCall[] }>(
        'GET',
        `truth?locationUid=${encodeURIComponent(location)}`,
      );
      newest.set(location, Math.max(0, ...data.map((c) => Date.parse(c.updatedAt))));
    }
    /** Where each location's offset records actually are (distributed mode checks it against its owner). */
    const recordPartitions = new Map<string, Set<number>>();
    const caughtUp = async (): Promise<boolean> => {
      const offsets = new Map<
        string,
        { cursor: string | null; watermark: string | null; history?: unknown }
      >();
      await probeTopic(
        this.endpoints.brokers,
        TOPICS.offsets,
        (m, partition) => {
          const key = m.key?.toString() ?? '';
          recordPartitions.set(key, (recordPartitions.get(key) ?? new Set()).add(partition));
          if (m.value !== null) offsets.set(key, JSON.parse(m.value.toString()) as never);
        },
        2000,
      );
      const behind = this.locations.filter((l) => {
        const o = offsets.get(`${CONNECTOR_NAME}/${l}`);
        const n = newest.get(l) ?? 0;
        return (
          n > 0 &&
          (o === undefined ||
            o.cursor !== null ||
            o.watermark === null ||
            Date.parse(o.watermark) !== n ||
            // A split location has caught up only when its history lane reached T0 too (issue 23).
            (o.history !== undefined && o.history !== null))
        );
      });
      if (behind.length > 0)
        this.say(`settling: ${behind.length} of ${this.locations.length} locations behind`);
      return behind.length === 0;
    };
    this.summary.settled = await until(caughtUp, this.options.profile.settleTimeoutMs, 10_000);
    this.summary.settleMs = Date.now() - start;
    if (!this.summary.settled)
      this.summary.violations.push(
        `the connector did not catch up within ${this.options.profile.settleTimeoutMs / 1000} s`,
      );
    if (this.options.distributed) {
      this.summary.finalOwnership = await finalOwnership(this.driver, (location) => [
        ...(recordPartitions.get(`${CONNECTOR_NAME}/${location}`) ?? []),
      ]);
      this.say(`final ownership ${this.summary.finalOwnership}`);
    }
    const exits = await Promise.all(
      this.fleet.currentRunning().map(async (last) => {
        this.fleet.retire(last);
        last.signal('SIGTERM');
        const exit = await Promise.race([last.exited, sleep(60_000).then(() => null)]);
        const text = exit === null ? 'no exit within 60 s of SIGTERM' : `exit ${exit.code ?? exit.signal}`;
        this.fleet.fact(last).finalExit = text;
        if (exit === null || exit.code !== 0)
          this.summary.violations.push(`final SIGTERM of ${this.fleet.label(last)}: ${text}`);
        return this.options.distributed ? `${this.fleet.label(last)} ${text}` : text;
      }),
    );
    this.summary.finalExit = exits.join(', ');
    this.say(
      `settled=${this.summary.settled} after ${(this.summary.settleMs / 1000).toFixed(0)} s; final ${this.summary.finalExit}`,
    );
  }

  private async runChecker(): Promise<void> {
    this.say('checker: reading the calls topic (read_committed) and comparing with the sandbox truth');
    const result = await check({
      brokers: this.endpoints.brokers,
      registryUrl: this.endpoints.registryUrl,
      sandboxUrl: `https://127.0.0.1:${PORTS.sandbox}`,
      sandboxCaFile: join(this.options.runDir, 'sandbox-ca.pem'),
      topic: TOPICS.calls,
      offsetsTopic: TOPICS.offsets,
      dlqTopic: TOPICS.dlq,
      connectorName: CONNECTOR_NAME,
      exactlyOnce: this.options.exactlyOnce,
      historyFile: this.historyFile,
      logFiles: [
        ...this.fleet.all.map((i) => i.logFile),
        ...Array.from({ length: this.summary.operatorLogins }, (_, i) =>
          join(this.logDir, `auth-login-${i + 1}.log`),
        ),
      ],
      secrets: [
        this.secrets.clientSecret,
        this.secrets.storeKey.toString('base64'),
        this.secrets.storeKey.toString('hex'),
      ],
    });
    this.summary.check = result;
    this.summary.violations.push(...result.violations);
    if (this.summary.crashLoops > 0) this.summary.violations.push(`crash loops: ${this.summary.crashLoops}`);
  }

  private tornDown: Promise<void> | null = null;

  /** Idempotent: the end of run() and Ctrl-C may both ask. */
  private teardown(): Promise<void> {
    this.tornDown ??= this.stopEverything();
    return this.tornDown;
  }

  private async stopEverything(): Promise<void> {
    for (const instance of this.fleet.all) if (instance.running) await this.fleet.kill9(instance);
    if (this.sandbox?.running) {
      this.sandbox.signal('SIGTERM');
      await Promise.race([this.sandbox.exited, sleep(10_000)]);
      this.sandbox.signal('SIGKILL');
    }
    await this.admin?.close().catch(() => undefined);
    if (!this.options.keepStack) {
      this.say('stopping the chaos stack');
      await this.stack.down().catch((error: unknown) => this.say(`stack down failed: ${String(error)}`));
    }
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

function randomUuid(random: Random): string {
  const hex = Array.from({ length: 32 }, () => random.int(0, 15).toString(16)).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

function isProcessFault(kind: FaultKind): boolean {
  return (PROCESS_FAULTS as readonly string[]).includes(kind);
}
