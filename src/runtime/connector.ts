/**
 * The composition root: builds every part of a running connector from a validated configuration and wires
 * them through the small interfaces they depend on (TokenProvider, CallsApi, RecordSink, OffsetStore).
 * Nothing else in the code base constructs these parts for production; `run` and `demo` both come here.
 *
 * Start-up is a few named steps (runtime/steps/), each failing fast with an actionable error:
 * 1. ops: metrics server, then the schema registry, waited for while down (steps/ops.ts);
 * 2. Kafka: topics, schemas, offset store, admin (steps/kafka.ts);
 * 3. API: token providers, one HTTP transport, one API client and enricher per grant (steps/api.ts);
 * 4. locations: the configured locations and their Scheduler (steps/locations.ts);
 * 5. ownership: which locations this instance runs and their sinks: single mode all of them, distributed mode
 *    the instances group's assignment (steps/ownership.ts);
 * 6. heartbeats (optional), then the configurations group (steps/configuration-peers.ts: which configurations the
 *    other instances run; reporting only, never holds up the start);
 * 7. the webhook receiver (optional, webhooks.enabled), last so it takes nudges only once all else runs (steps/webhooks.ts).
 *
 * Each step registers the undoing of what it opened on ONE stack (lifecycle.ts), which serves both a start that
 * fails half-way and `close()`, in reverse order. The ordering constraints follow from the order of the steps and
 * are these: background loops stop first; every sink closes (its last page committed or aborted) before the
 * instances group is left, so `offsets reset` cannot go ahead while a page may still commit; the metrics server,
 * opened first, closes last, so /healthz answers while the rest stops.
 *
 * Contract: `ConnectorRuntime.start()` once; `run(signal)` resolves after a graceful stop (signal aborted)
 * or once every location is stopped for good (sync/scheduler/health-rule.ts); `close()` releases everything and is safe to call
 * after a failed `run`. A fatal sink error (fenced by another instance) aborts the run.
 */
import { hostname } from 'node:os';
import type { ConnectorConfig } from '../config/schema.js';
import { freshnessObjectiveMs } from '../config/sections/observability.js';
import { configurationFingerprint } from '../config/config-diff.js';
import { loadConfig } from '../config/load.js';
import { livePollIntervalMs } from '../config/sections/webhooks.js';
import type { FatalError } from '../errors/index.js';
import type { KafkaClient } from '../kafka/client/port.js';
import type { Logger } from '../logging/logger.js';
import { ConnectorMetrics } from '../metrics/metrics.js';
import type { MetricsServerAddress } from '../ops/server.js';
import { packageVersion } from '../package-info.js';
import { minimumRoundMs } from '../sync/scheduler/minimum-round.js';
import type { LocationStatus } from '../sync/scheduler/scheduled-location.js';
import { systemClock, type Clock } from '../time/clock.js';
import { Lifecycle } from './lifecycle.js';
import { connectorStatus, type AssignmentStatus } from './status.js';
import { openApi } from './steps/api.js';
import { Failures, type StartContext } from './steps/context.js';
import { joinConfigurationPeers } from './steps/configuration-peers.js';
import { startHeartbeats } from './steps/heartbeats.js';
import { openKafka } from './steps/kafka.js';
import { ConfigReloader } from './reload.js';
import { locationReload } from './location-reload.js';
import { buildLocations, type Locations } from './steps/locations.js';
import { openOps, serveRunning } from './steps/ops.js';
import { takeOwnership, type Ownership } from './steps/ownership.js';
import { openSignals, type Signals } from './signals/signal-service.js';
import { SignalQueue } from './signals/signal-queue.js';
import { nudgeRelay, startWebhooks, webhookDeliveries } from './steps/webhooks.js';
import type { InstanceWriter, RoleStatus } from './instance-writer.js';

export interface ConnectorRuntimeOptions {
  config: ConnectorConfig;
  logger: Logger;
  /** Injected in tests; otherwise one with process metrics is created. */
  metrics?: ConnectorMetrics;
  env?: NodeJS.ProcessEnv;
  clock?: Clock;
  /** Aborted (SIGTERM) while start-up waits for the schema registry: the wait ends with its error. */
  signal?: AbortSignal;
  /**
   * The file `config` was read from: given, the configuration is reloaded while running, on SIGHUP and when the
   * file's directory changes (reload.ts); only `sources` may change, anything else is refused as a whole.
   */
  configFile?: string;
}

/** What a started runtime holds: the results of the start-up steps. */
interface RunningParts {
  config: ConnectorConfig;
  metrics: ConnectorMetrics;
  logger: Logger;
  metricsAddress: MetricsServerAddress | null;
  writer: InstanceWriter;
  lifecycle: Lifecycle;
  failures: Failures;
  assignment: () => AssignmentStatus | null;
}

export class ConnectorRuntime {
  readonly config: ConnectorConfig;
  readonly metrics: ConnectorMetrics;
  readonly metricsAddress: MetricsServerAddress | null;

  private constructor(private readonly parts: RunningParts) {
    this.config = parts.config;
    this.metrics = parts.metrics;
    this.metricsAddress = parts.metricsAddress;
  }

  static async start(options: ConnectorRuntimeOptions): Promise<ConnectorRuntime> {
    const { config, logger } = options;
    const clock = options.clock ?? systemClock;
    const metrics =
      options.metrics ??
      new ConnectorMetrics({
        clock,
        perLocationLabels: config.metrics.perLocationLabels,
        processMetrics: true,
        pollIntervalMs: livePollIntervalMs(config),
        freshnessObjectiveMs: freshnessObjectiveMs(config.metrics, livePollIntervalMs(config)),
        requestsPerSecond: config.api.requestsPerSecond,
        version: packageVersion(),
        connector: config.connector.name,
      });
    const lifecycle = new Lifecycle(logger, clock);
    const ctx: StartContext = {
      config,
      logger,
      metrics,
      clock,
      startedAt: clock.now(),
      lifecycle,
      failures: new Failures(config.connector.name, metrics, logger),
      ...(options.signal && { signal: options.signal }),
    };
    // Which sources this instance runs, from the start (a reload sets it again: runtime/reload.ts).
    metrics.configurationInfo.set(configurationFingerprint(config));
    // /status answers from the start (UNASSIGNED) and from the scheduler once it exists.
    const workerId = `${hostname()}:${process.pid}`;
    try {
      const ops = await openOps(ctx, () => connectorStatus(config.connector.name, workerId, null));
      const kafka = await openKafka(ctx);
      const api = await openApi(ctx, kafka.session.kafka, options.env);
      const deliveries = webhookDeliveries(ctx);
      // Backfill and reset signals, handed in by the signals channel (takeSignals), read by the locations.
      const signalQueue = new SignalQueue({ outcomesInPages: config.kafka.exactlyOnce });
      const locations = buildLocations(ctx, api, {
        signals: signalQueue,
        boundaryMaxBytes: kafka.session.boundaryMaxBytes,
        dynamic: config.connector.mode === 'distributed',
        published: deliveries?.published,
      });
      const ownership = await takeOwnership(ctx, kafka, locations);
      const { writer } = ownership;
      // The current writer's scheduler (single mode opens a new one when a standby takes over).
      const scheduler = {
        status: () => writer.locations(),
        waitReasons: () => writer.waitReasons(),
        nudge: (locationUid: string) => writer.nudge(locationUid),
      };

      await startHeartbeats(ctx, kafka.session.kafka, scheduler);
      const peers = joinConfigurationPeers(ctx, kafka.session.kafka);
      const signals = takeSignals(ctx, kafka.session.kafka, {
        ownership,
        locations,
        writer,
        queue: signalQueue,
      });
      if (deliveries !== null) {
        const wiring = deliveries.wire(scheduler, () => writer.status().role === 'standby');
        const sink =
          config.connector.mode === 'distributed'
            ? await nudgeRelay(ctx, kafka.session.kafka, {
                partitionCount: kafka.session.partitionCount,
                instanceId: `${hostname()}-${process.pid}-${clock.now()}`,
                owned: deliveries.owned(scheduler),
                sharedReplayKeys: (replay) => deliveries.sharedReplayKeys(replay),
                readiness: ops.readiness,
              })
            : wiring.sink;
        await startWebhooks(ctx, options.env, { ...wiring, sink });
      }

      const runtime = new ConnectorRuntime({
        config,
        metrics,
        logger,
        metricsAddress: ops.metricsAddress,
        writer,
        lifecycle,
        failures: ctx.failures,
        assignment: () => ownership.assignment(),
      });
      serveRunning(ctx, ops, {
        workerId,
        admin: kafka.admin,
        api,
        get sourceOf() {
          return locations.sourceOf;
        },
        scheduler,
        signals: () => signals.status(),
        configuration: () => peers.status(),
        assignment: () => ownership.assignment(),
        ...(config.connector.mode === 'single' && { role: () => writer.status() }),
      });
      if (options.configFile !== undefined) {
        const reloader = new ConfigReloader({
          file: options.configFile,
          running: config,
          target: locationReload(locations, ownership),
          metrics,
          applied: (fingerprint) => peers.applied(fingerprint),
          logger,
          clock,
          ...(options.env && { load: (file: string) => loadConfig(file, options.env) }),
        });
        reloader.start();
        lifecycle.defer('configuration reload', () => reloader.stop());
        // The file may have changed while the connector started, before the watch and SIGHUP were on.
        void reloader.reload();
      }
      logStarted(ctx, locations.configured.length);
      return runtime;
    } catch (error) {
      await lifecycle.close();
      throw error;
    }
  }

  /** Per-location status snapshot (demo live view, logs). */
  status(): LocationStatus[] {
    return this.parts.writer.locations();
  }

  /** Whether this instance writes or stands by, and since when (runtime/instance-writer.ts). */
  role(): RoleStatus {
    return this.parts.writer.status();
  }

  /**
   * The offsets-topic partitions this instance owns: distributed mode, the ones taken over from its group
   * assignment (null until the first assignment arrived); single mode, all of them (generationId null).
   */
  assignment(): AssignmentStatus | null {
    return this.parts.assignment();
  }

  /** The error that stopped the whole connector, if any (e.g. fenced by another instance). */
  get fatalError(): FatalError | null {
    return this.parts.failures.error;
  }

  /**
   * Runs until `signal` aborts (graceful stop), every location is stopped for good, or a fatal error. Fenced by
   * a newer instance of the same connector name, it stands by instead of stopping: it writes nothing, metrics are still
   * served; single mode stays ready (check `running`: GET /status says `role` standby) and takes over again once no newer instance is a
   * member of the instances group (runtime/writer-role.ts), distributed mode fails `/readyz` and waits for `signal`. Why not exit: a
   * restarted process (systemd, Docker restart policies) would fence the newer instance back, and nobody would
   * write once the newer one stops (a blue/green switch rolled back).
   */
  async run(signal: AbortSignal): Promise<void> {
    await this.parts.writer.run(signal);
  }

  /** Undoes everything the start opened, in reverse order (see the module comment). */
  async close(): Promise<void> {
    await this.parts.lifecycle.close();
  }
}

/** The start-up's last word: started, and whether the request rate can poll every location once per interval. */
function logStarted({ config, logger }: StartContext, locations: number): void {
  logger.info(
    {
      connector: config.connector.name,
      mode: config.connector.mode,
      locations,
      exactlyOnce: config.kafka.exactlyOnce,
    },
    'connector started',
  );
  const roundMs = minimumRoundMs(locations, config.api.requestsPerSecond);
  const intervalMs = livePollIntervalMs(config);
  if (roundMs > intervalMs)
    logger.warn(
      {
        locations,
        requestsPerSecond: config.api.requestsPerSecond,
        roundMs: Math.round(roundMs),
        intervalMs,
      },
      'api.requestsPerSecond cannot poll every location once per poll interval (poll.intervalMs, or webhooks.reconcileIntervalMs with webhooks): a round of idle polls takes at least roundMs, so each location is polled that often, not every interval (raise api.requestsPerSecond if the API allows it)',
    );
}

/**
 * Answers the signals of the locations this instance writes for (runtime/signals/signal-service.ts). Pause and
 * resume are carried out here: the paused set, read back from the signals topic, is taken out of the locations to
 * run (steps/locations.ts `active`), and the writer's partitions stop a paused location after its page in
 * flight and start a resumed one from its stored offset (PartitionHandover.reconfigure). Backfill and reset are
 * handed to `queue`, which the locations' orchestrators read before each page (sync/location/signal-steps-rule.ts);
 * a location not configured is refused LOCATION_NOT_CONFIGURED: each is answered, none left waiting. A standby
 * answers none. The channel opens in the background (signal-service.ts openSignals): a Kafka problem with it never
 * fails or holds up the start.
 */
function takeSignals(
  ctx: StartContext,
  kafka: KafkaClient,
  parts: { ownership: Ownership; locations: Locations; writer: InstanceWriter; queue: SignalQueue },
): Signals {
  const { ownership, locations, writer, queue } = parts;
  const { config, metrics, logger, clock, lifecycle } = ctx;
  let signals: Signals | null = null;
  const applyPaused = (): void => {
    if (signals === null) return;
    locations.setPaused(new Set(signals.status().pausedLocations));
    ownership.reconfigure().catch((error: unknown) => {
      logger.warn(
        { err: error },
        'paused or resumed locations not applied yet: the next change applies them',
      );
    });
  };
  signals = openSignals(kafka, {
    config,
    instance: signalsInstance(),
    ownsPartition: (partition) =>
      writer.status().role === 'writer' && (ownership.assignment()?.partitions.includes(partition) ?? false),
    configured: (uid) => locations.isConfigured(uid),
    target: queue,
    pausedChanged: () => applyPaused(),
    metrics,
    logger,
    clock,
  });
  const opened = signals;
  queue.attach({
    configured: (uid) => locations.isConfigured(uid),
    open: (signalId) => opened.isOpen(signalId),
    answering: (uid) => opened.answering(uid),
    completed: (signalId, written) => void opened.completed(signalId, written),
  });
  lifecycle.defer('signals', () => opened.close());
  ownership.onChanged(() => void opened.ownershipChanged());
  // Paused before the first read completed (a restart): applied now that it is known.
  applyPaused();
  return signals;
}

/** This instance as signal outcomes name it: the answerer's and the sink's (kafka/session.ts) alike. */
function signalsInstance(): string {
  return `${hostname()}-${process.pid}`;
}
