/**
 * `calls-connector demo`: the whole product on an embedded default, for a newcomer's first ten minutes.
 *
 * 1. a Kafka broker and schema registry: from KAFKA_BROKERS/SCHEMA_REGISTRY_URL, else the local JVM stack
 *    (Kafka and Apicurio from Maven Central), else Docker (testcontainers), else a message naming what to install;
 * 2. the bundled sandbox API over HTTPS, with an auto-approving user and live updates;
 * 3. the real OAuth flow: authorization URL → (auto-approving) consent → redirect to a local HTTPS listener →
 *    state check → code redemption → encrypted token store. The "browser" here is a small HTTPS client that
 *    follows the redirect, so the same code path as `auth login` runs end to end;
 * 4. the connector itself (ConnectorRuntime, as `run` builds it), with metrics on --metrics-port and its
 *    webhook receiver on, the sandbox sending it a delivery per change (demo-webhooks.ts);
 * 5. a live view until Ctrl-C (or --duration), then a summary and how to consume the topic.
 *
 * Everything the demo writes lives under `.calls-connector/demo/` (config, encrypted tokens, key, logs) so the
 * connector can be re-run by hand with `calls-connector run --config .calls-connector/demo/config.yaml`. Each
 * run starts afresh there (new key, store, config and topics; demo-state.ts says why and how).
 */
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { stringify } from 'yaml';
import { parseConfig } from '../config/load.js';
import { FatalError } from '../errors/index.js';
import { createLogger } from '../logging/logger.js';
import { ConnectorRuntime } from '../runtime/connector.js';
import { startSandbox, type RunningSandbox } from '@calls-connector/sandbox';
import { authorizeAgainstSandbox } from './sandbox-authorization.js';
import { arrivalsText, renderFrame, type ViewFrame, type ViewLocation } from './live-view.js';
import { TerminalView } from './terminal-view.js';
import { scrubSecretsInText } from '../logging/scrub-text.js';
import { freeLoopbackPort, loopbackPortFree } from './free-port.js';
import { nextSteps } from './next-steps.js';
import {
  demoFiles,
  freshStateNotice,
  leftoverError,
  startFresh,
  writePrivateFileAtomically,
} from './demo-state.js';
import {
  demoReceiverUrl,
  demoWebhooksSection,
  RECONCILE_INTERVAL_MS,
  webhookArrivals,
} from './demo-webhooks.js';

export interface DemoOptions {
  /** Stop after this many seconds; absent = until the signal aborts (Ctrl-C). */
  durationSeconds?: number;
  locations: number;
  callsPerLocation: number;
  liveUpdatesPerSecond: number;
  liveCreatesPerSecond: number;
  metricsPort: number;
  /**
   * Connector instances in this process (default 1). More than 1 runs them in distributed mode: they share the
   * locations through the Kafka consumer group, as replicas on several machines would (docs/scaling.md).
   */
  instances?: number;
  /** Folder for the demo's files. */
  workDir: string;
  signal: AbortSignal;
  out: NodeJS.WriteStream;
  /** How the person runs this CLI, for the commands printed at the end (`cliInvocation`). */
  cli: string;
}

export interface DemoSummary {
  published: number;
  topic: string;
  locations: number;
}

export async function runDemo(options: DemoOptions): Promise<DemoSummary> {
  const { out } = options;
  // The registry URL from SCHEMA_REGISTRY_URL may carry credentials (userinfo): never on the terminal.
  const say = (line: string) => out.write(`${scrubSecretsInText(line)}\n`);
  const files = demoFiles(options.workDir);
  const { workDir, logFile } = files;
  await mkdir(workDir, { recursive: true, mode: 0o700 });
  const logger = createLogger({
    level: 'info',
    format: 'json',
    destination: createWriteStream(logFile, { flags: 'a' }),
  });
  const cleanups: Array<() => Promise<void>> = [];
  const cleanup = async () => {
    for (const step of cleanups.reverse()) await step().catch(() => {});
  };

  try {
    say(freshStateNotice(files));
    say('1/4 Kafka and schema registry ...');
    const { provideStack, stackOrder } = await loadDevTooling();
    const stack = await provideStack(stackOrder());
    cleanups.push(() => stack.stop());
    say(`    ${stack.description}\n    brokers ${stack.brokers.join(',')}  registry ${stack.registryUrl}`);

    say('2/4 sandbox calls API (HTTPS, auto-approving user, live updates) ...');
    const callbackPort = await freeLoopbackPort();
    const clientSecret = randomBytes(24).toString('base64url');
    const redirectUri = `https://127.0.0.1:${callbackPort}/callback`;
    const seed = Date.now() % 1_000_000;
    // Everything the last run left goes (its store first), then this run's key and client are written.
    // The sandbox's certificate and key stay in the demo's folder: the sandbox started again by the printed
    // "run the connector alone" steps serves the certificate the config trusts (api.caFile). A new pair per run.
    const client = { clientId: 'calls-demo', clientSecret, redirectUri };
    await startFresh(files, client);
    const sandboxTls = { certFile: files.certFile, keyFile: files.certKeyFile };
    const sandbox: RunningSandbox = await startSandbox({
      port: 0,
      autoApprove: true,
      rotateRefreshTokens: true,
      tls: { ...sandboxTls, createIfMissing: true },
      client,
      data: {
        seed,
        locations: options.locations,
        callsPerLocation: options.callsPerLocation,
      },
      live: {
        updatesPerSecond: options.liveUpdatesPerSecond,
        createsPerSecond: options.liveCreatesPerSecond,
      },
    });
    cleanups.push(() => sandbox.close());
    say(`    ${sandbox.baseUrl}  ${sandbox.locations.length} locations`);
    await writePrivateFileAtomically(files.webhookSecretFile, sandbox.admin.webhooks.secret);

    // Key and secret live in files of the demo folder (mode 0600), never in the config file. The key and the
    // tokens sit in sibling folders: the token store refuses a key in, above or below the folder of its data.
    const { keyFile, secretFile, clientFile } = files;
    // A busy metrics port (another connector, a Prometheus exporter) must not end the demo: take a free one.
    let metricsPort = options.metricsPort;
    if (metricsPort !== 0 && !(await loopbackPortFree(metricsPort))) {
      metricsPort = await freeLoopbackPort();
      say(
        `    metrics port ${options.metricsPort} is busy: using ${metricsPort} (choose one with --metrics-port)`,
      );
    }
    const run = `demo-${new Date().toISOString().replace(/[-:T]/g, '').slice(0, 14)}`;
    const instances = options.instances ?? 1;
    const document = {
      connector: {
        name: `calls-${run}`,
        ...(instances > 1 && { mode: 'distributed' as const }),
      },
      api: { baseUrl: sandbox.baseUrl, caFile: sandboxTls.certFile, pageSize: 100, requestsPerSecond: 200 },
      oauth: {
        clientId: 'calls-demo',
        clientSecretFile: secretFile,
        redirectUri,
        scopes: ['read_phones'],
        keyFile,
        store: { type: 'file', path: files.storeFile },
      },
      sources: [{ locations: sandbox.locations }],
      kafka: {
        brokers: stack.brokers,
        topic: `calls-${run}`,
        offsetsTopic: `calls-${run}-offsets`,
        dlqTopic: `calls-${run}-dlq`,
        topicPartitions: 3,
        // The offsets topic's partitions bound how many instances share the work (docs/scaling.md); the group
        // notices a stopped instance within 6 s (the broker's minimum session timeout).
        ...(instances > 1 && {
          offsetsTopicPartitions: Math.max(12, instances),
          groupSessionTimeoutMs: 6_000,
          groupHeartbeatIntervalMs: 1_000,
        }),
      },
      schemaRegistry: { url: stack.registryUrl },
      poll: { intervalMs: 2_000, maxLocationsInFlight: Math.min(8, sandbox.locations.length) },
      metrics: { host: '127.0.0.1', port: metricsPort },
      logging: { level: 'info', format: 'json' },
    };
    const { configFile } = files;
    await writeFile(configFile, `# written by \`calls-connector demo\`\n${stringify(document)}`, {
      mode: 0o600,
    });
    const config = parseConfig(document, {});

    say('3/4 OAuth: authorize → approve → redirect → redeem ...');
    const grant = await authorizeAgainstSandbox({
      config,
      sandboxCaPem: sandbox.caCertPem ?? '',
      logger,
      signal: options.signal,
      show: (url) => say(`    authorization URL: ${url.replace(/state=[^&]+/, 'state=…')}`),
    });
    say(
      `    granted ${grant.scopes.join(' ')}; access token valid until ${new Date(grant.accessTokenExpiresAt).toISOString()} (stored encrypted)`,
    );

    say(
      instances > 1 ? `4/4 connector, ${instances} instances in distributed mode ...` : '4/4 connector ...',
    );
    // Each instance's receiver on a port of its own; the config file keeps it off (demo-webhooks.ts).
    const receiverPorts: number[] = [];
    for (let i = 0; i < instances; i++) receiverPorts.push(await freeLoopbackPort());
    const webhooks = (i: number) => demoWebhooksSection(receiverPorts[i] ?? 0, files.webhookSecretFile);
    // All instances start (join the group, take their partitions over) before any runs, so the split is
    // settled before the first page; the first serves metrics on the port asked for, the others on free ones.
    const runtimes: ConnectorRuntime[] = [];
    for (let i = 0; i < instances; i++) {
      const instanceConfig = parseConfig(
        {
          ...document,
          ...(i > 0 && { metrics: { ...document.metrics, port: 0 } }),
          webhooks: webhooks(i),
        },
        {},
      );
      const started = await ConnectorRuntime.start({
        config: instanceConfig,
        logger: instances > 1 ? logger.child({ instance: i + 1 }) : logger,
      });
      cleanups.push(() => started.close());
      runtimes.push(started);
      say(
        `    ${instances > 1 ? `instance #${i + 1}: ` : ''}metrics ${started.metricsAddress?.url ?? '(off)'}/metrics   logs ${logFile}`,
      );
    }
    // Every delivery to the first instance, as a load balancer may send them all to one (distributed mode:
    // it hands each nudge to the owner over the nudge topic).
    sandbox.admin.webhooks.addTarget(demoReceiverUrl(receiverPorts[0] ?? 0));
    say(
      `    webhooks: the sandbox sends each change to ${demoReceiverUrl(receiverPorts[0] ?? 0)}; ` +
        `reconciliation polls every ${RECONCILE_INTERVAL_MS / 1000}s`,
    );
    const statusOf = (): ViewLocation[] =>
      runtimes.flatMap((r, i) =>
        r.status().map((location) => (instances > 1 ? { ...location, instance: i + 1 } : location)),
      );
    say(
      options.durationSeconds === undefined
        ? '    Ctrl-C to stop\n'
        : `    running for ${options.durationSeconds}s\n`,
    );

    let previous: ViewFrame | null = null;
    const view = new TerminalView(out);
    const stop = new AbortController();
    // The signal handler prints a line of its own: draw the last frame below it rather than over it.
    const onAbort = () => {
      view.release();
      stop.abort();
    };
    options.signal.addEventListener('abort', onAbort, { once: true });
    const timer =
      options.durationSeconds === undefined
        ? undefined
        : setTimeout(() => stop.abort(), options.durationSeconds * 1000);
    const draw = async () => {
      const arrivals = await webhookArrivals(runtimes.map((r) => r.metrics));
      const frame: ViewFrame = { at: Date.now(), locations: statusOf(), arrivals };
      // Off a terminal a frame is appended: one every 5 s is enough for a log.
      if (view.isTerminal || previous === null || frame.at - previous.at >= 5_000) {
        view.draw(renderFrame(previous, frame));
        previous = frame;
      }
    };
    const redraw = setInterval(() => void draw(), view.isTerminal ? 1_000 : 5_000);
    try {
      await Promise.all(runtimes.map((r) => r.run(stop.signal)));
    } finally {
      clearInterval(redraw);
      if (timer) clearTimeout(timer);
      options.signal.removeEventListener('abort', onAbort);
    }
    await draw();

    const status = statusOf();
    const published = status.reduce((n, l) => n + l.totals.published, 0);
    say('');
    say(
      `Summary: ${published} call records published from ${status.length} locations; ` +
        `${status.reduce((n, l) => n + l.totals.traversalsCompleted, 0)} traversals completed, ` +
        `${status.reduce((n, l) => n + l.totals.redacted, 0)} customer numbers redacted (private or unknown), ` +
        `${status.reduce((n, l) => n + l.totals.deduplicated, 0)} boundary duplicates skipped.`,
    );
    say(
      `Webhooks: ${arrivalsText(await webhookArrivals(runtimes.map((r) => r.metrics)))} (deliveries missed).`,
    );
    const owned = (instance: number) => {
      const n = status.filter((l) => l.instance === instance).length;
      return `#${instance} owned ${n} location${n === 1 ? '' : 's'}`;
    };
    if (instances > 1)
      say(
        `Instances: ${runtimes.map((_, i) => owned(i + 1)).join(', ')} (one consumer group; stop one and the others take its locations over).`,
      );
    say('');
    say(
      nextSteps({
        topic: config.kafka.topic,
        registryUrl: config.schemaRegistry.url,
        brokers: stack.brokers,
        configFile,
        keyFile,
        cli: options.cli,
        sandbox: {
          port: Number(new URL(sandbox.baseUrl).port),
          seed,
          locations: options.locations,
          calls: options.callsPerLocation,
          liveUpdatesPerSecond: options.liveUpdatesPerSecond,
          liveCreatesPerSecond: options.liveCreatesPerSecond,
          clientFile,
          certFile: sandboxTls.certFile,
          keyFile: sandboxTls.keyFile,
          locationsFile: files.locationsFile,
        },
      }),
    );
    if (stack.leftRunning !== undefined) say(`\n${stack.leftRunning}`);
    return { published, topic: config.kafka.topic, locations: status.length };
  } catch (error) {
    throw leftoverError(error, files);
  } finally {
    await cleanup();
    logger.flush();
  }
}

/**
 * The development tooling the demo needs for its Kafka broker and registry (tools/devstack): part of a
 * source checkout, not of the published package, so it is loaded only when the demo runs and its absence
 * is reported as such.
 */
async function loadDevTooling(): Promise<typeof import('../../tools/devstack/stack-provider.js')> {
  try {
    return await import('../../tools/devstack/stack-provider.js');
  } catch (error) {
    throw new FatalError(
      'DEVSTACK_UNAVAILABLE',
      'calls-connector demo needs the development tooling of a source checkout (tools/devstack), which the ' +
        'published package leaves out: clone the repository, run `npm ci`, then `npx calls-connector demo`',
      { cause: error },
    );
  }
}
