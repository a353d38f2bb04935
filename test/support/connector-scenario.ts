/**
 * The scaffolding of a test with several connector processes of one connector name on one sandbox (rolling
 * restarts, paused instances, crashes, distributed instances): the sandbox, the config file the processes share,
 * the processes started (all killed at `close`, resumed first if paused), an offsets reader, and a wait for the
 * sandbox to serve more requests (what "at work" means: requests served, never time alone).
 *
 * `mode: 'distributed'` runs the processes in distributed mode, each with its metrics server on a free port, as
 * named instances (`startInstance`) whose /status and /metrics the helpers of distributed.ts read.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kafka } from 'kafkajs';
import { stringify } from 'yaml';
import type { RunningSandbox, SandboxOptions } from '../../packages/sandbox/src/index.js';
import { parseConfig } from '../../src/config/load.js';
import type { ConnectorConfig } from '../../src/config/schema.js';
import { KafkaOffsetStore } from '../../src/kafka/offsets/kafka-offset-store.js';
import { eventually } from './async.js';
import { connectorDocument, startTestSandbox } from './connector.js';
import { startConnectorProcess, type ConnectorProcess } from './connector-process.js';
import { alive, startInstance, type Instance } from './distributed.js';
import { testKafka } from './kafka.js';

export interface ConnectorScenario {
  sandbox: RunningSandbox;
  kafka: Kafka;
  config: ConnectorConfig;
  /** The config file the processes share (written with `logging.level: info`). */
  configFile: string;
  /** A process of the connector (`calls-connector run`), kept to be killed at `close`. */
  start: () => ConnectorProcess;
  /** A named process whose metrics server answers (/status, /metrics): distributed.ts reads it. */
  startInstance: (name: string) => Instance;
  /** Every process started so far, in order (instances included). */
  readonly processes: readonly ConnectorProcess[];
  /** Every instance started so far, in order. */
  readonly instances: readonly Instance[];
  /** Resolves once the sandbox served `more` requests beyond those served so far (60 s at most). */
  progress: (more: number, what: string) => Promise<void>;
  /** A read_committed reader of the connector's offsets (the "caught up" check reads it). */
  offsetStore: (groupIdPrefix: string) => KafkaOffsetStore;
  /** Kills every process still running (resuming a paused one first), waits for them, then closes the sandbox. */
  close: () => Promise<void>;
}

export interface ConnectorScenarioOptions {
  sandbox: SandboxOptions;
  connector: Parameters<typeof connectorDocument>[1];
  /** `single` (the default) or `distributed` (connector.mode, and a metrics server on a free port). */
  mode?: 'single' | 'distributed';
  /** Changes connectorDocument's document further (an `oauth` section in place of the static token, say). */
  document?: (document: Record<string, unknown>, sandbox: RunningSandbox) => Record<string, unknown>;
  /** Environment of the processes beyond the test's own, and for `${VAR}` in the document (secrets, keys). */
  env?: (sandbox: RunningSandbox) => NodeJS.ProcessEnv;
}

export async function connectorScenario(options: ConnectorScenarioOptions): Promise<ConnectorScenario> {
  const sandbox = await startTestSandbox(options.sandbox);
  const kafka = testKafka();
  const distributed = options.mode === 'distributed';
  const base = connectorDocument(sandbox, {
    ...options.connector,
    ...(distributed && { metrics: { enabled: true, port: 0, ...options.connector?.metrics } }),
  });
  const document = {
    ...(options.document?.(base, sandbox) ?? base),
    ...(distributed && {
      connector: { ...(base.connector as Record<string, unknown>), mode: 'distributed' },
    }),
    logging: { level: 'info', format: 'json' },
  };
  const env = options.env?.(sandbox) ?? {};
  const config = parseConfig(document, env);
  const configFile = join(await mkdtemp(join(tmpdir(), 'calls-scenario-')), 'config.yaml');
  await writeFile(configFile, stringify(document));
  const running: ConnectorProcess[] = [];
  const instances: Instance[] = [];
  return {
    sandbox,
    kafka,
    config,
    configFile,
    processes: running,
    instances,
    start: () => {
      const connector = startConnectorProcess(configFile, env);
      running.push(connector);
      return connector;
    },
    startInstance: (name) => {
      const instance = startInstance(name, configFile, env);
      running.push(instance);
      instances.push(instance);
      return instance;
    },
    progress: async (more, what) => {
      const target = sandbox.admin.stats().requests + more;
      await eventually(() => sandbox.admin.stats().requests >= target, 60_000, what);
    },
    offsetStore: (groupIdPrefix) =>
      new KafkaOffsetStore({
        kafka,
        topic: config.kafka.offsetsTopic,
        connectorName: config.connector.name,
        groupIdPrefix,
        loadTimeoutMs: 30_000,
      }),
    close: async () => {
      for (const connector of running) {
        if (!alive(connector)) continue;
        connector.child.kill('SIGCONT');
        connector.child.kill('SIGKILL');
        await connector.exited;
      }
      await sandbox.close();
    },
  };
}
