/**
 * Start-up step 1, ops: the metrics server first, so /healthz answers and /readyz says what is missing while
 * the rest starts (and it closes last); then the schema registry is asked, and waited for while it is down (a
 * wrong URL or credentials is named as such at once, see runtime/preflight.ts).
 */
import { createHttpsDispatcher } from '../../auth/https-dispatcher.js';
import { readRegistryCaFile } from '../../kafka/registry.js';
import type { SchemaRegistryProbe } from '../../ops/checks.js';
import { Readiness } from '../../ops/readiness.js';
import { MetricsServer, type MetricsServerAddress } from '../../ops/server.js';
import { waitForSchemaRegistry } from '../preflight.js';
import type { StartContext } from './context.js';

export interface Ops {
  readiness: Readiness;
  metricsAddress: MetricsServerAddress | null;
  /** How the schema registry is reached (its readiness check asks it again). */
  registryProbe: SchemaRegistryProbe;
  /** What GET /status answers from now on (until then: the connector, UNASSIGNED). */
  setStatus(source: () => object): void;
}

export async function openOps(ctx: StartContext, initialStatus: () => object): Promise<Ops> {
  const { config, logger, metrics, clock, lifecycle } = ctx;
  const readiness = new Readiness();
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
  };
}
