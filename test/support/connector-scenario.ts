/**
 * The scaffolding of a test with several connector processes of one connector name on one sandbox (rolling
 * restarts, paused instances): the sandbox, the config file the processes share, the processes started (all
 * killed at `close`, resumed first if paused), an offsets reader, and a wait for the sandbox to serve more
 * requests (what "at work" means: requests served, never time alone).
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
import { testKafka } from './kafka.js';

export interface ConnectorScenario {
  sandbox: RunningSandbox;
  kafka: Kafka;
  config: ConnectorConfig;
  /** A process of the connector (`calls-connector run`), kept to be killed at `close`. */
  start: () => ConnectorProcess;
  /** Every process started so far, in order. */
  readonly processes: readonly ConnectorProcess[];
  /** Resolves once the sandbox served `more` requests beyond those served so far (60 s at most). */
  progress: (more: number, what: string) => Promise<void>;
  /** A read_committed reader of the connector's offsets (the "caught up" check reads it). */
  offsetStore: (groupIdPrefix: string) => KafkaOffsetStore;
  /** Kills every process still running (resuming a paused one first), then closes the sandbox. */
  close: () => Promise<void>;
}

export async function connectorScenario(options: {
  sandbox: SandboxOptions;
  connector: Parameters<typeof connectorDocument>[1];
}): Promise<ConnectorScenario> {
  const sandbox = await startTestSandbox(options.sandbox);
  const kafka = testKafka();
  const document = connectorDocument(sandbox, options.connector);
  const config = parseConfig(document, {});
  const configFile = join(await mkdtemp(join(tmpdir(), 'calls-scenario-')), 'config.yaml');
  await writeFile(configFile, stringify({ ...document, logging: { level: 'info', format: 'json' } }));
  const running: ConnectorProcess[] = [];
  return {
    sandbox,
    kafka,
    config,
    processes: running,
    start: () => {
      const connector = startConnectorProcess(configFile);
      running.push(connector);
      return connector;
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
        if (connector.child.exitCode !== null || connector.child.signalCode !== null) continue;
        connector.child.kill('SIGCONT');
        connector.child.kill('SIGKILL');
      }
      await sandbox.close();
    },
  };
}
