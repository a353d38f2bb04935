/**
 * The composition root: builds every part of a running connector from a validated configuration and wires
 * them through the small interfaces they depend on (TokenProvider, CallsApi, RecordSink, OffsetStore).
 * Nothing else in the code base constructs these parts for production; `run` and `demo` both come here.
 *
 * Start-up order, each step failing fast with an actionable error:
 * 1. metrics server (so /healthz answers and /readyz says what is missing while the rest starts);
 *    then the schema registry is asked, and waited for while it is down (a wrong URL or credentials is named as
 *    such at once, see preflight.ts);
 * 2. Kafka session: topics, schemas, producer (fencing any older instance), then offsets (see KafkaSession);
 * 3. token providers (OAuth grant(s) from the encrypted store, or the static development token);
 * 4. one HTTP transport (keep-alive pool, global rate limit and concurrency cap) shared by one API client
 *    per grant; one enricher per grant;
 * 5. one LocationSync per configured location, all under one Scheduler.
 *
 * `connector.mode: distributed` (see kafka/group/partition-ownership.ts): step 2 opens no producer and reads no
 * offsets (DistributedKafkaSession); step 5 starts an empty Scheduler, and the instance joins the instances
 * group: each assignment hands partitions of the offsets topic to runtime/partition-handover.ts, which opens
 * that partition's producer, reads its offsets and schedules its locations (and undoes it on revocation).
 *
 * Contract: `ConnectorRuntime.start()` once; `run(signal)` resolves after a graceful stop (signal aborted)
 * or once every location is stopped for good (sync/healing.ts); `close()` releases everything and is safe to call
 * after a failed `run`. A fatal sink error (fenced by another instance) aborts the run.
 */
import { hostname } from 'node:os';
import type { Kafka } from 'kafkajs';
import type { Logger } from '../logging/logger.js';
import { CallsApiClient } from '../api/calls-api-client.js';
import { HttpTransport } from '../api/http-transport.js';
import { openOAuth, resolveClientSecret, type OAuthRuntime } from '../auth/oauth-runtime.js';
import { StaticTokenProvider, type TokenProvider } from '../auth/token-provider.js';
import type { ConnectorConfig } from '../config/schema.js';
import { FatalError } from '../errors/index.js';
import {
  assignmentCheck,
  grantCheck,
  kafkaCheck,
  locationsCheck,
  schemaRegistryCheck,
} from '../ops/checks.js';
import { Readiness, type NamedReadinessCheck } from '../ops/readiness.js';
import { ensureHeartbeatTopic, HeartbeatPublisher } from '../kafka/heartbeats.js';
import { DistributedKafkaSession } from '../kafka/group/distributed-session.js';
import { locationsByPartition, locationPartition } from '../kafka/group/location-partition.js';
import { PartitionOwnership } from '../kafka/group/partition-ownership.js';
import { InstancePresence, PRESENCE_SESSION_TIMEOUT_MS } from '../kafka/instance-presence.js';
import { KafkaSession } from '../kafka/session.js';
import { readRegistryCaFile } from '../kafka/registry.js';
import { createHttpsDispatcher } from '../auth/https-dispatcher.js';
import type { RecordSink } from '../sync/ports.js';
import type { LocationOffset } from '../sync/model.js';
import { PartitionHandover } from './partition-handover.js';
import { waitForSchemaRegistry } from './preflight.js';
import { waitUntilAvailable } from './wait-until-available.js';
import { ConnectorMetrics } from '../metrics/metrics.js';
import { MetricsServer, type MetricsServerAddress } from '../ops/server.js';
import { packageVersion } from '../package-info.js';
import { systemClock, type Clock } from '../time/clock.js';
import { Enricher } from '../sync/enricher.js';
import { BoundaryFingerprints } from '../sync/fingerprint.js';
import { LocationSync } from '../sync/location-sync.js';
import { EMPTY_OFFSET } from '../sync/model.js';
import { minimumRoundMs, Scheduler, type LocationStatus } from '../sync/scheduler.js';
import { connectorStatus, type AssignmentStatus } from './status.js';

/** The sink's fatal error when a newer instance took over the transactional id (see run()). */
const FENCED_BY_NEWER_INSTANCE = 'KAFKA_FENCED_BY_ANOTHER_INSTANCE';

/**
 * How long a single-mode start waits to become a member of the instances group before it initialises its
 * producer: a predecessor's member that was killed or paused has to expire first (its session timeout).
 */
const PRESENCE_JOIN_WAIT_MS = PRESENCE_SESSION_TIMEOUT_MS + 10_000;

/** Grant name used with a static development token. */
const STATIC_GRANT = 'static';

export interface ConnectorRuntimeOptions {
  config: ConnectorConfig;
  logger: Logger;
  /** Injected in tests; otherwise one with process metrics is created. */
  metrics?: ConnectorMetrics;
  env?: NodeJS.ProcessEnv;
  clock?: Clock;
  /** Aborted (SIGTERM) while start-up waits for the schema registry: the wait ends with its error. */
  signal?: AbortSignal;
}

export class ConnectorRuntime {
  private readonly fatal = new AbortController();

  private constructor(
    readonly config: ConnectorConfig,
    readonly metrics: ConnectorMetrics,
    private readonly logger: Logger,
    private readonly session: KafkaSession | DistributedKafkaSession,
    private readonly oauth: OAuthRuntime | null,
    private readonly transport: HttpTransport,
    private readonly scheduler: Scheduler,
    private readonly metricsServer: MetricsServer | null,
    readonly metricsAddress: MetricsServerAddress | null,
    private readonly readiness: Readiness,
    private readonly admin: { disconnect(): Promise<void> },
    /** Single mode: InstancePresence; distributed mode: PartitionOwnership (the same group). */
    private readonly presence: { leave(): Promise<void> },
    private readonly heartbeats: HeartbeatPublisher | null,
    /** Distributed mode only. */
    private readonly handover: PartitionHandover | null,
    private readonly assignmentOf: () => AssignmentStatus | null,
    private readonly stopBackground: AbortController,
  ) {}

  static async start(options: ConnectorRuntimeOptions): Promise<ConnectorRuntime> {
    const { config, logger } = options;
    const clock = options.clock ?? systemClock;
    const metrics =
      options.metrics ??
      new ConnectorMetrics({
        perLocationLabels: config.metrics.perLocationLabels,
        processMetrics: true,
        pollIntervalMs: config.poll.intervalMs,
        requestsPerSecond: config.api.requestsPerSecond,
        version: packageVersion(),
        connector: config.connector.name,
      });
    const readiness = new Readiness();
    // /status answers from the start (UNASSIGNED) and from the scheduler once it exists.
    const workerId = `${hostname()}:${process.pid}`;
    let statusSource: () => object = () => connectorStatus(config.connector.name, workerId, null);
    const opened: Array<() => Promise<void>> = [];
    const closeOpened = async () => {
      for (const close of opened.reverse()) await close().catch(() => {});
    };

    try {
      let metricsServer: MetricsServer | null = null;
      let metricsAddress: MetricsServerAddress | null = null;
      if (config.metrics.enabled) {
        metricsServer = new MetricsServer({
          metrics,
          readiness,
          host: config.metrics.host,
          port: config.metrics.port,
          logger,
          status: () => statusSource(),
        });
        metricsAddress = await metricsServer.start();
        opened.push(() => metricsServer!.stop());
        logger.info({ url: metricsAddress.url }, 'metrics, /healthz and /readyz listening');
      }

      const registryCa = readRegistryCaFile(config.schemaRegistry);
      const registryDispatcher =
        registryCa === undefined ? undefined : createHttpsDispatcher({ extraCaPem: registryCa });
      if (registryDispatcher !== undefined) opened.push(() => registryDispatcher.close());
      const registryProbe = {
        url: config.schemaRegistry.url,
        ...(registryDispatcher !== undefined && { dispatcher: registryDispatcher }),
        ...(config.schemaRegistry.username !== undefined && { username: config.schemaRegistry.username }),
        ...(config.schemaRegistry.password !== undefined && { password: config.schemaRegistry.password }),
      };
      const waitOptions = { logger, clock, ...(options.signal && { signal: options.signal }) };
      await waitForSchemaRegistry(registryProbe, waitOptions);

      let onFatal: (error: FatalError) => void = () => {};
      // A membership refused before the runtime exists (a fast INCONSISTENT_GROUP_PROTOCOL) is kept for it.
      let lostEarly: Error | null = null;
      let onLost: (error: Error) => void = (error) => {
        lostEarly ??= error;
      };
      // A cluster that is down at start is waited for (KAFKA_UNAVAILABLE is retriable), like the registry.
      const distributed = config.connector.mode === 'distributed';
      // Single mode: membership in `<name>-instances` is taken before the producer's first initialisation, so an
      // older instance that wakes up sees this one and stands by rather than fence it back (instance-presence.ts).
      let singlePresence: InstancePresence | null = null;
      const sessionOptions = {
        config,
        boundaryCap: config.poll.boundaryCap,
        logger,
        metrics,
        clock,
        onFatal: (error: FatalError) => onFatal(error),
        ...(!distributed && {
          beforeProducer: async (kafka: Kafka) => {
            if (singlePresence === null) {
              const joined = await InstancePresence.join(
                kafka,
                config.connector.name,
                config.kafka.offsetsTopic,
                (error) => onLost(error),
                clock,
              );
              singlePresence = joined;
              opened.push(() => joined.leave());
            }
            if (!(await singlePresence.joined(PRESENCE_JOIN_WAIT_MS)))
              logger.warn(
                { waitedMs: PRESENCE_JOIN_WAIT_MS },
                'not yet a member of the instances group: initialising the producer anyway (an older instance that wakes up now may not see this one)',
              );
          },
          instances: {
            alone: () =>
              singlePresence === null
                ? Promise.reject(new Error('not a member of the instances group'))
                : singlePresence.alone(),
          },
        }),
      };
      const session = await waitUntilAvailable<KafkaSession | DistributedKafkaSession>(
        () =>
          distributed ? DistributedKafkaSession.start(sessionOptions) : KafkaSession.start(sessionOptions),
        { ...waitOptions, what: 'the Kafka cluster' },
      );
      opened.push(() => session.close());
      const admin = session.kafka.admin();
      await admin.connect();
      opened.push(() => admin.disconnect());

      const oauth =
        config.oauth === undefined
          ? null
          : await openOAuth(config, {
              metrics,
              logger,
              kafka: session.kafka,
              ...(options.env && { env: options.env }),
            });
      if (oauth) opened.push(() => oauth.close());
      // Keyed by a secret all instances share and none stores (sync/fingerprint.ts says why it is keyed).
      const fingerprints = BoundaryFingerprints.fromSecret(
        config.oauth === undefined
          ? (config.auth.staticToken ?? '')
          : await resolveClientSecret(config.oauth),
      );
      const tokensFor = (grant: string): TokenProvider => {
        if (oauth) return oauth.tokenProvider(grant);
        const token = config.auth.staticToken;
        if (token === undefined)
          throw new FatalError('AUTH_NOT_CONFIGURED', 'configure `oauth` or `auth.staticToken`');
        return new StaticTokenProvider(token);
      };

      const transport = await HttpTransport.fromConfig(config.api, metrics, clock);
      opened.push(() => transport.close());

      // One API client and one enricher per grant: each grant has its own token, all share the transport's
      // connection pool, rate limit and concurrency cap.
      const grants = new Map<string, { tokens: TokenProvider; enricher: Enricher; api: CallsApiClient }>();
      const grantOf = (source: ConnectorConfig['sources'][number]) => (oauth ? source.grant : STATIC_GRANT);
      for (const source of config.sources) {
        const grant = grantOf(source);
        if (grants.has(grant)) continue;
        const tokens = tokensFor(grant);
        const api = new CallsApiClient({
          http: transport,
          grant,
          tokens,
          settings: config.api,
          metrics,
          logger,
          clock,
        });
        grants.set(grant, {
          tokens,
          api,
          enricher: new Enricher({
            api,
            enabled: config.api.enrich,
            concurrency: config.api.enrichConcurrency,
            poisonPageAttempts: config.api.poisonCallPageAttempts,
          }),
        });
      }

      const sourceOf = new Map<string, ConnectorConfig['sources'][number]>();
      for (const source of config.sources) {
        for (const locationUid of source.locations) {
          if (sourceOf.has(locationUid)) {
            throw new FatalError(
              'CONFIG_DUPLICATE_LOCATION',
              `location ${locationUid} is listed twice in sources; list each location once`,
            );
          }
          sourceOf.set(locationUid, source);
        }
      }
      const empty = (): LocationOffset => ({ ...EMPTY_OFFSET, boundary: [] });
      const syncFor = (
        locationUid: string,
        startOffset: LocationOffset | undefined,
        sink: RecordSink,
      ): LocationSync => {
        const source = sourceOf.get(locationUid)!;
        const { api, enricher } = grants.get(grantOf(source))!;
        return new LocationSync({
          locationUid,
          startOffset: startOffset ?? empty(),
          api,
          enricher,
          sink,
          metrics,
          logger,
          clock,
          settings: {
            pageSize: config.api.pageSize,
            startSince: source.startSince ?? null,
            boundaryCap: config.poll.boundaryCap,
            boundaryMaxBytes: session.boundaryMaxBytes,
            privacy: config.privacy.customerPhoneNumber,
            fingerprints,
            commitRetry: config.api.retry,
            tombstoneGone: config.kafka.tombstoneGoneCalls,
          },
        });
      };
      const configured = [...sourceOf.keys()];
      const locations: LocationSync[] =
        session instanceof KafkaSession
          ? configured.map((uid) => syncFor(uid, session.initialOffsets.get(uid), session.sink))
          : [];

      const scheduler = new Scheduler({
        locations,
        dynamic: distributed,
        settings: {
          maxLocationsInFlight: config.poll.maxLocationsInFlight,
          intervalMs: config.poll.intervalMs,
          pagesPerTurn: config.poll.pagesPerTurn,
          shutdownTimeoutMs: config.poll.shutdownTimeoutMs,
          failureBackoff: { ...config.api.retry, maxAttempts: Number.MAX_SAFE_INTEGER },
          stoppedRetry: config.poll.stoppedRetry,
        },
        metrics,
        logger,
        clock,
      });

      // Who owns what: single mode, everything (membership only tells `offsets reset` the connector runs);
      // distributed mode, the group's assignment (see the module comment).
      const stopBackground = new AbortController();
      let presence: { leave(): Promise<void> };
      let handover: PartitionHandover | null = null;
      let assignmentOf: () => AssignmentStatus | null;
      if (session instanceof DistributedKafkaSession) {
        const { partitionCount } = session;
        const byPartition = locationsByPartition(config.connector.name, configured, partitionCount);
        const work = new PartitionHandover({
          locationsByPartition: byPartition,
          scheduler,
          metrics,
          logger,
          clock,
          revokeBoundMs: config.poll.shutdownTimeoutMs,
          retryDelayMs: config.kafka.groupSessionTimeoutMs,
          work: {
            openSink: (partition, takenOver) => session.openPartitionSink(partition, takenOver),
            loadOffsets: (partitions) => session.loadPartitions(partitions),
            syncFor: (uid, _partition, offset, sink) => syncFor(uid, offset, sink),
          },
        });
        handover = work;
        const ownership = await PartitionOwnership.join({
          kafka: session.kafka,
          connectorName: config.connector.name,
          offsetsTopic: config.kafka.offsetsTopic,
          sessionTimeoutMs: config.kafka.groupSessionTimeoutMs,
          heartbeatIntervalMs: config.kafka.groupHeartbeatIntervalMs,
          rebalanceTimeoutMs: config.kafka.groupRebalanceTimeoutMs,
          onAssignment: (assignment) => work.onAssignment(assignment),
          onHeartbeat: () => work.onHeartbeat(),
          onLost: (error) => onLost(error),
          logger,
          clock,
        });
        presence = ownership;
        assignmentOf = () => {
          const current = ownership.assignment;
          return current === null
            ? null
            : { partitions: work.partitions, generationId: current.generationId };
        };
        void watchUnowned(ownership, admin, configured, {
          partitionOf: (uid) => locationPartition(config.connector.name, uid, partitionCount),
          metrics,
          clock,
          intervalMs: config.kafka.groupHeartbeatIntervalMs,
          signal: stopBackground.signal,
        });
      } else {
        // Membership in `<name>-instances` (taken before the producer, see sessionOptions) tells `offsets reset`
        // (and people) that this connector is running, and an older instance that this one is newer.
        const joined: InstancePresence | null = singlePresence;
        if (joined === null) throw new Error('single mode starts its session through beforeProducer');
        presence = joined;
        const all = await offsetsTopicPartitions(admin, config.kafka.offsetsTopic);
        metrics.ownedLocations.set(configured.length);
        metrics.ownedPartitions.set(all.length);
        metrics.unownedLocations.set(0);
        assignmentOf = () => ({ partitions: all, generationId: null });
      }
      const leavePresence = presence;
      if (distributed) opened.push(() => leavePresence.leave());
      // On a failed start, before leaving the group (closed in reverse order): the partitions' producers.
      const heldPartitions = handover;
      opened.push(async () => {
        stopBackground.abort();
        await heldPartitions?.close();
      });

      let heartbeats: HeartbeatPublisher | null = null;
      if (config.kafka.heartbeatIntervalMs > 0) {
        await ensureHeartbeatTopic(session.kafka, config.kafka);
        const publisher = new HeartbeatPublisher({
          kafka: session.kafka,
          topic: config.kafka.heartbeatTopic,
          intervalMs: config.kafka.heartbeatIntervalMs,
          connectorName: config.connector.name,
          locations: () => scheduler.status(),
          metrics,
          logger,
          clock,
        });
        await publisher.start();
        opened.push(() => publisher.stop());
        heartbeats = publisher;
      }

      const checks: NamedReadinessCheck[] = [
        kafkaCheck(admin),
        schemaRegistryCheck(registryProbe),
        ...[...grants.entries()].map(([grant, { tokens }]) => grantCheck(tokens, grant)),
        locationsCheck(() => scheduler.status()),
        ...(distributed ? [assignmentCheck(() => assignmentOf())] : []),
      ];
      for (const check of checks) readiness.add(check);

      const runtime = new ConnectorRuntime(
        config,
        metrics,
        logger,
        session,
        oauth,
        transport,
        scheduler,
        metricsServer,
        metricsAddress,
        readiness,
        admin,
        presence,
        heartbeats,
        handover,
        assignmentOf,
        stopBackground,
      );
      onFatal = (error) => runtime.fail(error);
      onLost = (error) =>
        runtime.fail(
          new FatalError(
            'KAFKA_GROUP_MEMBERSHIP_LOST',
            `the instances group ${config.connector.name}-instances refused or ended this instance's membership, so it owns nothing: ${error.message}`,
            { cause: error },
          ),
        );
      if (lostEarly !== null) onLost(lostEarly);
      statusSource = () =>
        connectorStatus(
          config.connector.name,
          workerId,
          runtime.status(),
          runtime.fatalError,
          assignmentOf(),
          {
            scopes: transport.limiters.status(),
            scopeOf: (uid) => {
              const source = sourceOf.get(uid);
              return transport.limiters.scopeName(source === undefined ? undefined : grantOf(source));
            },
          },
        );
      readiness.add({
        name: 'writer',
        check: () => {
          const fatal = runtime.fatalError;
          return Promise.resolve(
            fatal === null
              ? { name: 'writer', ok: true }
              : { name: 'writer', ok: false, detail: `${fatal.code}: ${fatal.message}` },
          );
        },
      });
      logger.info(
        {
          connector: config.connector.name,
          mode: config.connector.mode,
          locations: configured.length,
          exactlyOnce: config.kafka.exactlyOnce,
        },
        'connector started',
      );
      const roundMs = minimumRoundMs(configured.length, config.api.requestsPerSecond);
      if (roundMs > config.poll.intervalMs)
        logger.warn(
          {
            locations: configured.length,
            requestsPerSecond: config.api.requestsPerSecond,
            roundMs: Math.round(roundMs),
            intervalMs: config.poll.intervalMs,
          },
          'api.requestsPerSecond cannot poll every location once per poll.intervalMs: a round of idle polls takes at least roundMs, so each location is polled that often, not every interval (raise api.requestsPerSecond if the API allows it)',
        );
      return runtime;
    } catch (error) {
      await closeOpened();
      throw error;
    }
  }

  /** Per-location status snapshot (demo live view, logs). */
  status(): LocationStatus[] {
    return this.scheduler.status();
  }

  /**
   * The offsets-topic partitions this instance owns: distributed mode, the ones taken over from its group
   * assignment (null until the first assignment arrived); single mode, all of them (generationId null).
   */
  assignment(): AssignmentStatus | null {
    return this.assignmentOf();
  }

  /** The error that stopped the whole connector, if any (e.g. fenced by another instance). */
  get fatalError(): FatalError | null {
    return (this.fatal.signal.reason as FatalError | undefined) ?? null;
  }

  /**
   * Runs until `signal` aborts (graceful stop), every location is stopped for good, or a fatal sink
   * error. Fenced by a newer instance of the same connector name, it stands by instead: it writes
   * nothing more, `/readyz` fails (check `writer`), metrics are still served, and it resolves normally
   * when `signal` aborts. Why not exit: a restarted process (systemd, Docker restart policies) would
   * fence the newer instance back; a rolling update sends this one SIGTERM anyway.
   */
  async run(signal: AbortSignal): Promise<void> {
    await this.scheduler.run(AbortSignal.any([signal, this.fatal.signal]));
    const fatal = this.fatalError;
    if (fatal?.code === FENCED_BY_NEWER_INSTANCE) {
      if (!signal.aborted) {
        this.logger.warn(
          { code: fatal.code },
          'fenced by a newer instance with the same connector.name: standing by (not ready) until stopped',
        );
        await new Promise<void>((resolve) =>
          signal.addEventListener('abort', () => resolve(), { once: true }),
        );
      }
      return;
    }
    if (fatal) throw fatal;
  }

  async close(): Promise<void> {
    this.stopBackground.abort();
    const steps: Array<[string, () => Promise<void>]> = [
      ['heartbeats', () => this.heartbeats?.stop() ?? Promise.resolve()],
      // Distributed mode: each owned partition's sink, bounded like the session's.
      ['partitions', () => this.handover?.close() ?? Promise.resolve()],
      // Bounded: a commit the scheduler abandoned at its shutdown timeout may still hang on Kafka.
      ['kafka session', () => this.session.close(this.config.poll.shutdownTimeoutMs)],
      ['kafka admin', () => this.admin.disconnect()],
      // After the session: the last page is committed before `offsets reset` may go ahead.
      ['instance presence', () => this.presence.leave()],
      ['oauth', () => this.oauth?.close() ?? Promise.resolve()],
      ['api transport', () => this.transport.close()],
      ['metrics server', () => this.metricsServer?.stop() ?? Promise.resolve()],
    ];
    for (const [name, step] of steps) {
      try {
        await step();
      } catch (error) {
        this.logger.warn({ err: error, component: name }, 'error while closing');
      }
    }
  }

  private fail(error: FatalError): void {
    if (error.code === FENCED_BY_NEWER_INSTANCE) {
      this.metrics.standby.set(1);
      this.logger.warn({ err: error, code: error.code }, 'a newer instance took over: no more writes');
    } else this.logger.fatal({ err: error, code: error.code }, 'connector stopping: fatal error');
    if (!this.fatal.signal.aborted) this.fatal.abort(error);
  }
}

/** The partition ids of the offsets topic (single mode owns them all). */
async function offsetsTopicPartitions(
  admin: {
    fetchTopicMetadata(options: {
      topics: string[];
    }): Promise<{ topics: Array<{ partitions: Array<{ partitionId: number }> }> }>;
  },
  topic: string,
): Promise<number[]> {
  const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
  return (topics[0]?.partitions ?? []).map((p) => p.partitionId).sort((a, b) => a - b);
}

/**
 * Keeps calls_connector_unowned_locations: every `intervalMs`, the configured locations whose partition no
 * member of the group owns (kept as it was while the group rebalances, or when the group cannot be described).
 */
async function watchUnowned(
  ownership: PartitionOwnership,
  admin: Parameters<PartitionOwnership['ownedByGroup']>[0],
  configured: readonly string[],
  options: {
    partitionOf: (uid: string) => number;
    metrics: ConnectorMetrics;
    clock: Clock;
    intervalMs: number;
    signal: AbortSignal;
  },
): Promise<void> {
  const partitions = configured.map(options.partitionOf);
  options.metrics.unownedLocations.set(configured.length);
  while (!options.signal.aborted) {
    try {
      const owned = await ownership.ownedByGroup(admin);
      if (owned !== null)
        options.metrics.unownedLocations.set(partitions.filter((p) => !owned.has(p)).length);
    } catch {
      // Kafka unavailable: the gauge keeps its last value; the kafka readiness check says why.
    }
    await options.clock.sleep(options.intervalMs, options.signal).catch(() => undefined);
  }
}
