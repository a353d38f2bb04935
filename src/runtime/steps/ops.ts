/**
 * Start-up step 1, ops: the metrics server first, so /healthz answers and /readyz says what is missing while
 * the rest starts (and it closes last); then the schema registry is asked, and waited for while it is down (a
 * wrong URL or credentials is named as such at once, see runtime/preflight.ts). Once every other step ran,
 * `serveRunning` adds the readiness checks and the full GET /status. Until then /readyz fails on the check
 * `started`: with no check at all it would pass, and an orchestrator would count a starting instance ready
 * (in a rolling update, stopping the old one before the new one has joined its group or initialised).
 */
import type { KafkaAdmin } from '../../kafka/client/port.js';
import { createHttpsDispatcher } from '../../https/dispatcher.js';
import { readRegistryCaFile } from '../../kafka/avro/registry.js';
import {
  assignmentCheck,
  grantCheck,
  kafkaCheck,
  locationsCheck,
  runningCheck,
  schemaRegistryCheck,
  type SchemaRegistryProbe,
} from '../../ops/checks.js';
import { livePollIntervalMs } from '../../config/sections/webhooks.js';
import { Readiness } from '../../ops/readiness.js';
import { MetricsServer, type MetricsServerAddress } from '../../ops/server.js';
import type { Scheduler } from '../../sync/scheduler/scheduler.js';
import { waitForSchemaRegistry } from '../preflight.js';
import {
  connectorStatus,
  statusWaitOf,
  type AssignmentStatus,
  type ConfigurationStatus,
  type FreshnessView,
} from '../status.js';
import type { RoleStatus } from '../instance-writer.js';
import type { SignalsStatus } from '../signals/signal-answers.js';
import type { Api, Source } from './api.js';
import type { StartContext } from './context.js';

export interface Ops {
  readiness: Readiness;
  metricsAddress: MetricsServerAddress | null;
  /** How the schema registry is reached (its readiness check asks it again). */
  registryProbe: SchemaRegistryProbe;
  /** What GET /status answers from now on (until then: the connector, UNASSIGNED). */
  setStatus(source: () => object): void;
  /** Every start-up step ran: the check `started` passes from now on. */
  markStarted(): void;
}

export async function openOps(ctx: StartContext, initialStatus: () => object): Promise<Ops> {
  const { config, logger, metrics, clock, lifecycle } = ctx;
  const readiness = new Readiness();
  let started = false;
  readiness.add({
    name: 'started',
    check: () =>
      Promise.resolve(
        started
          ? { name: 'started', ok: true }
          : { name: 'started', ok: false, detail: 'starting: the start-up steps have not all run yet' },
      ),
  });
  let status = initialStatus;
  let metricsAddress: MetricsServerAddress | null = null;
  if (config.metrics.enabled) {
    const server = new MetricsServer({
      metrics,
      readiness,
      host: config.metrics.host,
      port: config.metrics.port,
      logger,
      status: () => status(),
    });
    metricsAddress = await server.start();
    lifecycle.defer('metrics server', () => server.stop());
    logger.info({ url: metricsAddress.url }, 'metrics, /healthz and /readyz listening');
  }

  const registryCa = readRegistryCaFile(config.schemaRegistry);
  const dispatcher = registryCa === undefined ? undefined : createHttpsDispatcher({ extraCaPem: registryCa });
  if (dispatcher !== undefined) lifecycle.defer('schema registry probe', () => dispatcher.close());
  const registryProbe: SchemaRegistryProbe = {
    url: config.schemaRegistry.url,
    ...(dispatcher !== undefined && { dispatcher }),
    ...(config.schemaRegistry.username !== undefined && { username: config.schemaRegistry.username }),
    ...(config.schemaRegistry.password !== undefined && { password: config.schemaRegistry.password }),
  };
  await waitForSchemaRegistry(registryProbe, { logger, clock, ...(ctx.signal && { signal: ctx.signal }) });
  return {
    readiness,
    metricsAddress,
    registryProbe,
    setStatus: (source) => {
      status = source;
    },
    markStarted: () => {
      started = true;
    },
  };
}

/** What the running connector is made of, as /readyz and GET /status report it. */
export interface RunningView {
  workerId: string;
  admin: KafkaAdmin;
  api: Api;
  sourceOf: ReadonlyMap<string, Source>;
  scheduler: Pick<Scheduler, 'status' | 'waitReasons'>;
  assignment: () => AssignmentStatus | null;
  /** Single mode: whether this instance writes or stands by, and since when. */
  role?: () => RoleStatus;
  /** The paused locations and the signals running (null: signals not taken). */
  signals?: () => SignalsStatus | null;
  /** This instance's configuration and the other instances' as it sees them. */
  configuration?: () => ConfigurationStatus;
}

/** The readiness checks of every part, and the full GET /status (until now: the connector, UNASSIGNED). */
export function serveRunning(
  { config, failures, metrics, clock }: StartContext,
  ops: Ops,
  view: RunningView,
): void {
  const { api, scheduler } = view;
  const checks = [
    kafkaCheck(view.admin),
    schemaRegistryCheck(ops.registryProbe),
    ...[...api.grants.entries()].map(([grant, { tokens }]) => grantCheck(tokens, grant)),
    locationsCheck(() => scheduler.status()),
    ...(config.connector.mode === 'distributed' ? [assignmentCheck(() => view.assignment())] : []),
  ];
  for (const check of checks) ops.readiness.add(check);
  ops.readiness.add(
    runningCheck(() => {
      const ended = failures.error;
      const stopped = failures.stopped.aborted ? ended : null;
      return {
        stopped,
        standDown: stopped === null ? ended : null,
        takesOver: config.connector.mode === 'single',
      };
    }),
  );
  ops.markStarted();
  const freshnessView = (): FreshnessView => {
    const reasons = new Map(scheduler.waitReasons().map((w) => [w.locationUid, statusWaitOf(w.reason)]));
    return {
      nowMs: clock.now(),
      intervalMs: livePollIntervalMs(config),
      effectiveIntervalMs: metrics.effectiveIntervalMs(),
      waitReasonOf: (uid) => reasons.get(uid) ?? null,
    };
  };
  ops.setStatus(() => ({
    ...connectorStatus(
      config.connector.name,
      view.workerId,
      scheduler.status(),
      failures.error,
      view.assignment(),
      {
        scopes: api.transport.limiters.status(),
        scopeOf: (uid) => {
          const source = view.sourceOf.get(uid);
          return api.transport.limiters.scopeName(source === undefined ? undefined : api.grantOf(source));
        },
      },
      view.role?.() ?? null,
      freshnessView(),
    ),
    ...withSignals(view.signals?.() ?? null),
    ...(view.configuration !== undefined && { configuration: view.configuration() }),
  }));
}

/** /status's `signals`: the paused locations and the signals running, when signals are taken. */
function withSignals(signals: SignalsStatus | null): { signals?: SignalsStatus } {
  return signals === null ? {} : { signals };
}
