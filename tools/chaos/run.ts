/**
 * One chaos run: its own stack, the sandbox and the connector as separate processes of the built CLI, live
 * changes throughout, the fault schedule of the seed, then settle, check and report.
 *
 * The driver plays the operator and the supervisor (systemd's Restart=always, a Deployment's restarts): it
 * restarts a connector that exits, runs `auth login` when a grant is lost, and does rolling restarts. It
 * never tells the connector anything else. Everything it starts is stopped at the end, even on failure: each
 * part registers its stop on the run's lifecycle stack as it starts.
 *
 * This class only sequences the run. Its parts: the sandbox (sandbox-process.ts), the live changes
 * (live-changes.ts), the operator (operator.ts), the supervisor (instances.ts, unexpected-exits.ts), the
 * committed progress (committed-progress.ts, topic-observer.ts), the faults (faults/: one unit per kind,
 * faults/table.ts), settling (settle.ts) and the checker (final-check.ts, checker.ts).
 *
 * Single mode runs one instance (connector.mode single) and starts a replacement for each process fault;
 * `--distributed` runs several instances of one name (instances.ts supervises them) whose process faults hit
 * a random one, with distributed mode's own SIGSTOP and rolling restart in distributed.ts.
 */
import { randomBytes } from 'node:crypto';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CommittedProgress } from './committed-progress.js';
import {
  POLL_INTERVAL_MS,
  REQUESTS_PER_SECOND,
  WEBHOOK_SECRET_ENV,
  writeConnectorConfig,
} from './connector-config.js';
import { awaitOwnership, OWNERSHIP_CAP_MS, type DistributedDriver } from './distributed.js';
import {
  budgetIntervalMs,
  firstTraversalsDone,
  GRANTS,
  locationsByGrant,
  type GrantName,
} from './fault-checks.js';
import { backgroundFaults } from './faults/background.js';
import type { FaultReport } from './faults/outcome.js';
import { applyFault, isProcessFault, type FaultContext } from './faults/table.js';
import { NO_WEBHOOK_FAULTS, WEBHOOK_BACKGROUND } from './faults/webhook-faults.js';
import { checkPublished } from './final-check.js';
import {
  fairIntervalMs,
  freshnessViolation,
  committedRecoveryMs,
  freshnessRecord,
  judgeRecord,
  LEARNED_RATE_PROBE,
  ownRecoveryAllowanceMs,
  Publications,
  type FaultWindow,
} from './freshness.js';
import type { Backfill } from './judge.js';
import { runHostileCases } from './hostile.js';
import { Fleet } from './instances.js';
import { IntervalSampler } from './interval-sampler.js';
import { Lifecycle } from './lifecycle.js';
import { LiveChanges } from './live-changes.js';
import { Operator } from './operator.js';
import { sleep, until } from './processes.js';
import { seededRandom, type Random } from './random.js';
import { PORTS, RUN_ID } from './run-names.js';
import { startSandbox } from './sandbox-process.js';
import { planFaults, TIMEOUTS, type PlannedFault } from './schedule.js';
import { settle } from './settle.js';
import { ChaosStack, type StackEndpoints } from './stack.js';
import { newSummary, type ChaosOptions, type FaultOutcome, type RunSummary } from './summary.js';
import { TopicObserver } from './topic-observer.js';
import { UnexpectedExits } from './unexpected-exits.js';
import { routedChanges, webhookFigures } from './webhook-figures.js';
import { WebhookIngress } from './webhook-ingress.js';
import { newWebhookSecret } from './webhook-signing.js';
import { witnessPython } from './witness.js';

/** How long a fault's recovery (the next committed page after its end) is waited for. */
const RECOVERY_CAP_MS = 240_000;

export class ChaosRun {
  private readonly stack = new ChaosStack();
  /** Everything the run started, stopped in reverse order at its end (also on failure or Ctrl-C). */
  private readonly lifecycle = new Lifecycle();
  /** The connector processes: one slot in single mode, `instances` in distributed mode. */
  private readonly fleet: Fleet;
  private readonly exits: UnexpectedExits;
  private readonly secrets = {
    clientSecret: randomBytes(24).toString('base64url'),
    storeKey: randomBytes(32),
    webhookSecret: newWebhookSecret(),
  };
  private readonly historyFile: string;
  private readonly logDir: string;
  private readonly started = Date.now();
  private readonly summary: RunSummary;
  /** Set once the fault phase is over or the run failed: the background loops end. */
  private stopBackground = false;
  private phaseStart = 0;
  /** When the quiet baseline before the first fault began (the end of the start-up). */
  private quietFrom = 0;
  private endpoints!: StackEndpoints;
  private grantLocations: Record<GrantName, string[]> = { default: [], second: [] };
  private live: LiveChanges | null = null;
  private operator: Operator | null = null;
  /** The connector's effective poll interval over the fault phase (the freshness rule's input). */
  private readonly intervals: IntervalSampler;
  /** Every committed record's version and Kafka timestamp, as the checker's witness read them. */
  private readonly publications = new Publications();
  /** The backfill signals the faults sent (signal-faults.ts), for the checker. */
  private readonly backfills: Backfill[] = [];
  /** Their `--wait` commands' ends (each reports its outcome), awaited before the checker. */
  private readonly signalsEnded: Promise<void>[] = [];
  /** When the live changes stopped (settling began): the end of the last fault's freshness window. */
  private liveStoppedAt = 0;

  constructor(private readonly options: ChaosOptions) {
    this.historyFile = join(options.runDir, 'history.jsonl');
    this.logDir = join(options.runDir, 'logs');
    mkdirSync(this.logDir, { recursive: true });
    this.summary = newSummary(options);
    this.exits = new UnexpectedExits({
      distributed: options.distributed,
      say: (message) => this.say(message),
      violation: (message) => this.summary.violations.push(message),
    });
    this.fleet = new Fleet({
      size: options.distributed ? options.instances : 1,
      portBase: PORTS.metricsBase,
      portCount: PORTS.metricsCount,
      configFile: (n, port) => this.configFile(n, port),
      logFile: (name) => join(this.logDir, `${name}.log`),
      env: () => this.env,
      stopping: () => this.stopBackground || this.lifecycle.closing,
      onUnexpectedExit: (instance, slot, exit) => this.exits.record(instance, slot, exit),
    });
    this.intervals = new IntervalSampler(this.fleet);
    // The stack is stopped last (the first thing registered), even when it never came up.
    this.lifecycle.defer(async () => {
      if (options.keepStack) return;
      this.say('stopping the chaos stack');
      await this.stack.down().catch((error: unknown) => this.say(`stack down failed: ${String(error)}`));
    });
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
      [WEBHOOK_SECRET_ENV]: this.secrets.webhookSecret,
      FORCE_COLOR: '0',
    };
  }

  /** Ctrl-C: stop everything the run started, then exit 130. */
  abort(): void {
    this.stopBackground = true;
    void this.lifecycle.close().finally(() => process.exit(130));
  }

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
      await this.lifecycle.close();
    }
    this.collectFacts();
    return this.summary;
  }

  /** The chaos run proper: sandbox, authorization, connector, faults, settle, checker, hostile bodies. */
  private async faultsAndCheck(plan: PlannedFault[], liveRandom: Random): Promise<void> {
    const { seed, profile, distributed } = this.options;
    const say = (message: string): void => this.say(message);
    const violation = (message: string): void => void this.summary.violations.push(message);
    const stopped = (): boolean => this.stopBackground;
    // The checker's witness must be there before the faults, not found missing after them.
    this.say(`checker's witness: ${witnessPython()} (librdkafka)`);
    const { admin, locations } = await startSandbox(
      {
        seed,
        profile,
        runDir: this.options.runDir,
        logDir: this.logDir,
        clientSecret: this.secrets.clientSecret,
        webhookSecret: this.secrets.webhookSecret,
        say,
      },
      this.lifecycle,
    );
    const ingress = new WebhookIngress({
      port: PORTS.ingress,
      secret: this.secrets.webhookSecret,
      backends: () =>
        this.fleet.all
          .filter((p) => p.running)
          .map((p) => ({ name: p.name, port: this.fleet.metricsPort(p) + PORTS.webhookOffset })),
      journalFile: join(this.options.runDir, 'webhooks.jsonl'),
    });
    await ingress.start();
    this.lifecycle.defer(() => ingress.close());
    await admin.call('POST', 'webhooks/targets', { url: ingress.url });
    this.say(`webhooks: the sandbox sends to the ingress ${ingress.url}, in front of every running instance`);
    this.grantLocations = locationsByGrant(locations);
    const topics = new TopicObserver(this.endpoints.brokers);
    const progress = new CommittedProgress(topics);
    const live = new LiveChanges({ admin, historyFile: this.historyFile, locations, profile, say, stopped });
    const operator = new Operator({
      admin,
      configFile: () => this.configFile(0),
      env: () => this.env,
      logDir: this.logDir,
      connectorLogs: () => this.fleet.all.map((i) => i.logFile),
      say,
      stopped,
    });
    this.live = live;
    this.operator = operator;
    await live.snapshot();
    for (const grant of GRANTS) await operator.authorize(grant);
    this.lifecycle.defer(async () => {
      for (const instance of this.fleet.all) if (instance.running) await this.fleet.kill9(instance);
    });
    for (let slot = 0; slot < this.fleet.size; slot++) this.fleet.start(slot);
    const writing = live.start(liveRandom);
    const background = [progress.loop(stopped), writing, operator.loop(), this.intervals.loop(stopped)];
    if (!(await until(() => progress.lastAt > 0, 300_000, 500)))
      throw new Error(`the connector committed no page within 5 minutes; see ${this.logDir}`);
    const driver: DistributedDriver = {
      fleet: this.fleet,
      partitionOf: () => topics.partitionOf(locations),
      violation,
    };
    // Distributed mode: the instances start together and rebalance while they join; a fault begun before
    // ownership settles would be judged on locations whose owner is still changing, not on the fault.
    if (distributed) {
      const whole = await awaitOwnership(driver, () => this.fleet.currentRunning(), OWNERSHIP_CAP_MS);
      this.say(
        whole.at === null
          ? `ownership NOT whole before the faults: ${whole.problems.slice(0, 3).join('; ')}`
          : 'ownership whole among the instances',
      );
    }
    this.say('first page committed; fault phase begins');
    await admin.call('PUT', 'faults', backgroundFaults(seed));
    await admin.call('PUT', 'webhooks/faults', WEBHOOK_BACKGROUND);
    // The quiet baseline: the background faults only, the delivered changes' figures outside fault windows; once
    // every location's first traversal is done (the start-up round is not steady state), 60 s at most.
    const started = await until(
      async () => firstTraversalsDone(await topics.offsetReading(), locations),
      60_000,
      500,
    );
    if (!started)
      this.say('the first traversals were not all done within 60 s; the quiet baseline begins anyway');
    this.quietFrom = Date.now();
    this.say(`quiet baseline: ${profile.quietBaselineMs / 1000} s of background faults only`);
    await sleep(profile.quietBaselineMs);
    const context: FaultContext = {
      fleet: this.fleet,
      distributed,
      driver,
      admin,
      topics,
      waitForProgress: (after, capMs) => progress.waitFor(after, capMs),
      report: this.faultReport(),
      stack: this.stack,
      seed,
      locations,
      grantLocations: this.grantLocations,
      announcedAt: () => ingress.takenByLocation(),
      offsetReading: () => topics.offsetReading(),
      changesPerSecond: profile.liveUpdatesPerSecond + profile.liveCreatesPerSecond,
      imported: (calls, madeAt) => live.imported(calls, madeAt),
      importSize: profile.name === 'short' ? 400 : 1000,
      sendBackfill: (range, timeoutMs) => operator.backfill(range, timeoutMs),
      backfilled: (backfill, ended) => {
        this.backfills.push(backfill);
        this.signalsEnded.push(ended);
      },
      ingress,
      floodSize: profile.name === 'short' ? 200 : 1000,
    };
    this.phaseStart = Date.now();
    for (const fault of plan) {
      const wait = this.phaseStart + fault.atMs - Date.now();
      if (wait > 0) await sleep(wait);
      await this.inject(fault, seededRandom(fault.seed), context, progress);
    }
    this.liveStoppedAt = Date.now();
    await admin.call('PUT', 'webhooks/faults', NO_WEBHOOK_FAULTS);
    await settle(
      {
        admin,
        live,
        fleet: this.fleet,
        brokers: this.endpoints.brokers,
        locations,
        settleTimeoutMs: profile.settleTimeoutMs,
        distributed,
        driver,
        say,
        violation,
      },
      this.summary,
    );
    this.stopBackground = true;
    await Promise.all(background);
    await Promise.all(this.signalsEnded);
    await this.runChecker(operator);
    this.judgeFreshness(live);
    this.judgeWebhooks(live, ingress);
    if (profile.hostileBodies) await this.hostileBodies();
  }

  /** One fault: its unit (faults/table.ts), its recovery and, distributed, its handover; then its event line. */
  private async inject(
    fault: PlannedFault,
    random: Random,
    context: FaultContext,
    progress: CommittedProgress,
  ): Promise<void> {
    const started = Date.now();
    const outcome: FaultOutcome = {
      kind: fault.kind,
      atMs: started - this.phaseStart,
      startMs: started,
      endMs: null,
      recoveryMs: null,
      detail: '',
    };
    try {
      const result = await applyFault(fault, random, context);
      outcome.detail = result.detail;
      outcome.endMs = result.end;
      if (result.budgetIntervalMs !== undefined) outcome.budgetIntervalMs = result.budgetIntervalMs;
      if (result.handoverMs !== undefined) outcome.handoverMs = result.handoverMs;
      // Recovery: the next committed page after the fault's end (the operator logs in again should a grant be lost).
      outcome.recoveryMs = await progress.waitFor(result.end, RECOVERY_CAP_MS);
      if (this.options.distributed && isProcessFault(fault.kind) && outcome.handoverMs === undefined) {
        const whole = await awaitOwnership(
          context.driver,
          () => this.fleet.currentRunning(),
          OWNERSHIP_CAP_MS,
        );
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

  /** What the fault units record for the report, into the summary. */
  private faultReport(): FaultReport {
    const summary = this.summary;
    return {
      violation: (message) => void summary.violations.push(message),
      faultCheck: (text) => void summary.faultChecks.push(text),
      fencedInstance: (text) => void summary.fencedInstanceOutcomes.push(text),
      rollingRestart: (text) => void summary.rollingRestartOutcomes.push(text),
      killInsideTransaction: () => void summary.killsInsideTransaction++,
      killBetweenRefreshAndStorage: () => void summary.killsBetweenRefreshAndStorage++,
    };
  }

  /**
   * The freshness rule (freshness.ts) over every fault: its window runs from its start to the next fault's
   * (the last one's to the end of the live changes); the effective interval is the configured one, or the
   * longer one the budget the API allowed implies (a fault's own limit, else the configured
   * api.requestsPerSecond); the connector's gauge in that window is reported beside it. The recovery is the
   * later of the run's (the offsets topic's stable offsets moving, which an aborted transaction does too) and
   * the first record the witness saw committed after the fault's end. The judge's inputs go to the run folder's
   * freshness.json, judged from there (rejudge.ts judges it again offline, the same way).
   */
  private judgeFreshness(live: LiveChanges): void {
    const { profile } = this.options;
    const faults = this.summary.faults;
    const windows: FaultWindow[] = faults.map((f, i) => {
      const untilMs = faults[i + 1]?.startMs ?? this.liveStoppedAt;
      const gaugeMaxMs = this.intervals.maxBetween(f.startMs, untilMs);
      const budget = f.budgetIntervalMs ?? budgetIntervalMs(profile.locations, REQUESTS_PER_SECOND);
      return {
        kind: f.kind,
        startMs: f.startMs,
        endMs: f.endMs ?? untilMs,
        untilMs,
        recoveryMs: committedRecoveryMs(f.recoveryMs, f.endMs ?? untilMs, this.publications),
        ...(f.handoverMs !== undefined && { handoverMs: f.handoverMs }),
        allowanceMs: this.kindAllowanceMs(f.kind),
        effectiveIntervalMs: fairIntervalMs(POLL_INTERVAL_MS, budget),
        gaugeMaxMs,
      };
    });
    const record = freshnessRecord(windows, live.changes, this.publications, this.phaseStart);
    writeFileSync(join(this.options.runDir, 'freshness.json'), `${JSON.stringify(record)}\n`);
    this.summary.freshness = judgeRecord(record);
    for (const f of this.summary.freshness) {
      const late = freshnessViolation(f);
      if (late === null) continue;
      if (this.options.holdFreshness) this.summary.violations.push(late);
      else this.summary.lateChanges.push(late);
    }
  }

  /** What a fault's kind needs by this run's configuration to notice its own end (freshness.ts). */
  private readonly kindAllowanceMs = (kind: string): number =>
    ownRecoveryAllowanceMs(kind, {
      maxRetryAfterMs: TIMEOUTS.maxRetryAfterMs,
      stoppedRetryInitialDelayMs: this.options.profile.stoppedRetryInitialDelayMs ?? 60_000,
      ...LEARNED_RATE_PROBE,
    });

  /** The deliveries judged and each change's route to Kafka (webhook-figures.ts), into the summary. */
  private judgeWebhooks(live: LiveChanges, ingress: WebhookIngress): void {
    const figures = webhookFigures({
      attempts: ingress.attempts,
      changes: live.changes,
      publications: this.publications,
      faults: this.summary.faults,
      quietFromMs: this.quietFrom,
      sharedReplayWindow: this.summary.mode === 'distributed',
      allowanceMs: this.kindAllowanceMs,
    });
    this.summary.webhooks = figures;
    const routed = routedChanges(
      live.changes,
      ingress.attempts,
      this.publications,
      this.summary.faults,
      this.quietFrom,
      this.kindAllowanceMs,
    );
    writeFileSync(
      join(this.options.runDir, 'webhook-changes.jsonl'),
      routed.map((c) => JSON.stringify(c)).join('\n'),
    );
    this.summary.violations.push(...figures.violations);
    // Reported, never a violation: a percentile over the few dozen changes made outside the faults, on a machine
    // the run shares with its stack. The goal is held by `npm run bench -- webhooks` over thousands of changes.
    if (figures.late !== null) this.summary.lateChanges.push(figures.late);
  }

  private async runChecker(operator: Operator): Promise<void> {
    const result = await checkPublished({
      endpoints: this.endpoints,
      runDir: this.options.runDir,
      exactlyOnce: this.options.exactlyOnce,
      historyFile: this.historyFile,
      logFiles: [...this.fleet.all.map((i) => i.logFile), ...operator.logFiles],
      secrets: this.secrets,
      say: (message) => this.say(message),
      backfills: this.backfills,
      onRecord: (record) =>
        this.publications.add(
          record.call.uid,
          Date.parse(record.call.updatedAtIso),
          record.timestamp ?? null,
        ),
    });
    this.summary.check = result;
    this.summary.violations.push(...result.violations);
    if (this.exits.crashLoops > 0) this.summary.violations.push(`crash loops: ${this.exits.crashLoops}`);
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

  /** The config of process number `instance` (0: `auth login`), with its own metrics port. */
  private configFile(instance: number, metricsPort?: number): string {
    const { runDir, distributed, exactlyOnce, profile } = this.options;
    const settings = { runDir, distributed, exactlyOnce, profile, endpoints: this.endpoints };
    return writeConnectorConfig({ ...settings, grantLocations: this.grantLocations }, instance, metricsPort);
  }

  /** The counts the run's parts kept, into the summary (the report's input). */
  private collectFacts(): void {
    const { summary, fleet } = this;
    summary.durationMs = Date.now() - this.started;
    summary.peakRssBytes = Math.max(0, ...fleet.all.map((i) => i.peakRssBytes));
    for (const instance of fleet.all) {
      const fact = fleet.fact(instance);
      fact.peakRssBytes = Math.max(fact.peakRssBytes, instance.peakRssBytes);
    }
    summary.slots = fleet.facts;
    summary.connectorStarts = fleet.all.length;
    summary.unexpectedExits = this.exits.exits;
    summary.crashLoops = this.exits.crashLoops;
    summary.initialCalls = this.live?.initialCalls ?? 0;
    summary.liveUpdates = this.live?.updates ?? 0;
    summary.liveCreates = this.live?.creates ?? 0;
    summary.operatorLogins = this.operator?.logins ?? 0;
  }
}
