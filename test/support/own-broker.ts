/**
 * A short-lived single-node Kafka broker (KRaft) of a test's own, for what the shared stack's broker must not
 * be put through (reconfiguring it, killing it): the jars scripts/stack.mjs resolved (CALLS_STACK_HOME,
 * STACK_KAFKA_VERSION), free ports, a data dir of its own. A PLAINTEXT listener is always there: the
 * inter-broker listener, and what tells that the broker is up. Further listeners (say SASL_PLAINTEXT) and
 * settings are the caller's.
 *
 * `kill()` ends the JVM with SIGKILL (no clean shutdown: what a crash or an OOM kill leaves) and `restart()`
 * starts it again on the same data dir and ports, so clients find it where it was.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, openSync, readFileSync, statSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import { freeLoopbackPort } from '../../src/demo/free-port.js';
import { applyKafkajsIdleTimerFix } from '../../src/kafka/client/kafkajs-idle-timer-fix.js';

export interface OwnBrokerOptions {
  /** Names the broker in errors and its temporary dir (e.g. 'oauth'). */
  name: string;
  /** Listeners besides PLAINTEXT and CONTROLLER, by name, with their security protocol; each gets a free port. */
  listeners?: readonly { name: string; protocol: string }[];
  /** Further server.properties lines (settings of those listeners, say). */
  properties?: readonly string[];
  /** Further JVM options (system properties). */
  jvmOptions?: readonly string[];
  /** log4j2 levels by logger name (say DEBUG for the transaction coordinator); the root stays WARN. */
  logLevels?: Readonly<Record<string, string>>;
  /** How long a start may take before it fails with the broker's log (default 45 s). */
  startTimeoutMs?: number;
}

export interface OwnBroker {
  /** host:port of the PLAINTEXT listener. */
  broker: string;
  /** host:port of each further listener, by name. */
  listeners: Readonly<Record<string, string>>;
  /** The broker's log so far (WARN and above), across restarts. */
  log(): string;
  /** Its log.dirs (partition directories, __transaction_state included), for kafka-dump-log evidence. */
  dataDir: string;
  /** SIGKILL, resolved once the JVM is gone. */
  kill(): Promise<void>;
  /** Starts the killed broker again on the same data dir and ports; resolves once it answers. */
  restart(): Promise<void>;
  /** Stops it (SIGTERM, SIGKILL after 10 s) and removes its data. */
  stop(): Promise<void>;
  /**
   * Kafka's `kafka-transactions.sh` against this broker (its TransactionsCommand, from the stack's kafka-tools jar),
   * as an operator runs it: `describe-producers`, `abort`, `find-hanging`... Resolves with what it printed.
   */
  transactions(...args: string[]): Promise<string>;
}

/** A producer with an open transaction on a partition, as `kafka-transactions.sh describe-producers` lists it. */
export interface OpenTransaction {
  producerId: string;
  startOffset: string;
}

/** The open transactions in `describe-producers` output (a CurrentTransactionStartOffset other than -1 or None). */
export function openTransactions(describeProducers: string): OpenTransaction[] {
  const lines = describeProducers
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.startsWith('SLF4J'));
  const header = lines[0]?.split('\t').map((c) => c.trim()) ?? [];
  const id = header.indexOf('ProducerId');
  const start = header.indexOf('CurrentTransactionStartOffset');
  if (id < 0 || start < 0) return [];
  return (
    lines
      .slice(1)
      .map((line) => line.split('\t').map((c) => c.trim()))
      // No open transaction: -1 (Kafka 3.x) or None (4.x).
      .filter((cells) => cells[start] !== undefined && cells[start] !== '-1' && cells[start] !== 'None')
      .map((cells) => ({ producerId: cells[id] ?? '', startOffset: cells[start] ?? '' }))
  );
}

/**
 * The line Kafka's transaction coordinator logs (INFO, kafka.coordinator.transaction) when it drops a partition's
 * markers as if the partition were deleted: on 4.x also for a partition without a live leader (KAFKA-20734,
 * docs/kafka-hanging-transaction.md). Its transactional id follows "send transaction markers for".
 */
export const SKIPPED_MARKERS =
  /Couldn't find leader endpoint for partitions .* these partitions are likely deleted already/;

/**
 * SIGKILLs `own` as soon as its transaction coordinator's log (__transaction_state-0, the one partition own-broker
 * configures) grows, that is once the coordinator logged what the caller's EndTxn asked (PrepareCommit or
 * PrepareAbort), or after 2 s. Call it right after sending the EndTxn; resolves once the JVM is gone.
 */
export function killOnceTransactionLogged(own: OwnBroker): Promise<void> {
  const segment = join(own.dataDir, '__transaction_state-0', '00000000000000000000.log');
  const before = statSync(segment).size;
  const deadline = Date.now() + 2000;
  return new Promise((resolveKill) => {
    const poll = (): void => {
      if (statSync(segment).size > before || Date.now() > deadline) resolveKill(own.kill());
      else setImmediate(poll);
    };
    poll();
  });
}

const HOST = '127.0.0.1';

function kafkaClasspath(): string {
  const repoRoot = resolve(import.meta.dirname, '../..');
  const home = resolve(process.env.CALLS_STACK_HOME ?? join(repoRoot, '.cache', 'stack'));
  const version = process.env.STACK_KAFKA_VERSION ?? '4.4.0';
  const file = join(home, `kafka-${version}`, 'classpath.txt');
  if (!existsSync(file))
    throw new Error(`no Kafka ${version} jars in ${home}: run \`node scripts/stack.mjs fetch\` first`);
  return withSlf4jBinding(readFileSync(file, 'utf8').trim());
}

/**
 * The broker's slf4j 1.7 binding: 4.x's classpath pairs slf4j-api 1.7 with log4j's slf4j2 binding, so the broker
 * logs nothing (SLF4J falls back to its NOP logger); 3.x's binds reload4j, which our log4j2 file does not configure.
 * slf4j-simple of the api's version, when the repository has it beside the api, takes that place: the broker then
 * logs WARN and above (and `logLevels`) to its log file, on either version.
 */
function withSlf4jBinding(classpath: string): string {
  const jars = classpath.split(':');
  const api = jars.find((jar) => /\/org\/slf4j\/slf4j-api\/1\.[^/]+\/slf4j-api-1\.[^/]+\.jar$/.test(jar));
  const simple = api?.replaceAll('slf4j-api', 'slf4j-simple');
  if (simple === undefined || !existsSync(simple)) return classpath;
  return [...jars.filter((jar) => !/\/slf4j-(reload4j|log4j12)-[^/]+\.jar$/.test(jar)), simple].join(':');
}

function javaBinary(): string {
  return process.env.JAVA_HOME === undefined ? 'java' : join(process.env.JAVA_HOME, 'bin', 'java');
}

async function answers(broker: string): Promise<boolean> {
  applyKafkajsIdleTimerFix(); // as testKafka does: an idle kafkajs client would print TimeoutNegativeWarning
  const admin = new Kafka({
    brokers: [broker],
    logLevel: logLevel.NOTHING,
    retry: { retries: 0 },
    connectionTimeout: 1000,
  }).admin();
  try {
    await admin.connect();
    return (await admin.describeCluster()).brokers.length > 0;
  } catch {
    return false;
  } finally {
    await admin.disconnect().catch(() => {});
  }
}

function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolveExit) => {
    if (child.exitCode !== null || child.signalCode !== null) resolveExit();
    else child.once('exit', () => resolveExit());
  });
}

function running(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/** A KRaft cluster id (16 bytes, base64url), never starting with '-' (the storage tool would take it for an option). */
function clusterId(): string {
  for (;;) {
    const id = Buffer.from(randomUUID().replaceAll('-', ''), 'hex').toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

export async function startOwnBroker(options: OwnBrokerOptions): Promise<OwnBroker> {
  const classpath = kafkaClasspath();
  const dir = await mkdtemp(join(tmpdir(), `${options.name}-kafka-`));
  const plainPort = await freeLoopbackPort();
  const controllerPort = await freeLoopbackPort();
  const extra: { name: string; protocol: string; port: number }[] = [];
  for (const listener of options.listeners ?? []) extra.push({ ...listener, port: await freeLoopbackPort() });
  const listenerList = (withController: boolean) =>
    [
      `PLAINTEXT://${HOST}:${plainPort}`,
      ...extra.map((l) => `${l.name}://${HOST}:${l.port}`),
      ...(withController ? [`CONTROLLER://${HOST}:${controllerPort}`] : []),
    ].join(',');
  const protocolMap = [
    'PLAINTEXT:PLAINTEXT',
    ...extra.map((l) => `${l.name}:${l.protocol}`),
    'CONTROLLER:PLAINTEXT',
  ];
  const properties = join(dir, 'server.properties');
  await writeFile(
    properties,
    [
      'process.roles=broker,controller',
      'node.id=1',
      `controller.quorum.voters=1@${HOST}:${controllerPort}`,
      `listeners=${listenerList(true)}`,
      `advertised.listeners=${listenerList(false)}`,
      'controller.listener.names=CONTROLLER',
      `listener.security.protocol.map=${protocolMap.join(',')}`,
      'inter.broker.listener.name=PLAINTEXT',
      `log.dirs=${join(dir, 'data')}`,
      'num.partitions=1',
      'offsets.topic.replication.factor=1',
      'offsets.topic.num.partitions=1',
      'transaction.state.log.replication.factor=1',
      'transaction.state.log.min.isr=1',
      'transaction.state.log.num.partitions=1',
      'group.initial.rebalance.delay.ms=0',
      'auto.create.topics.enable=false',
      // A restart after kill -9 registers the broker again only once its previous registration's session
      // expired (DUPLICATE_BROKER_REGISTRATION until then): 9 s by default, kept short here.
      'broker.heartbeat.interval.ms=500',
      'broker.session.timeout.ms=1500',
      ...(options.properties ?? []),
    ].join('\n') + '\n',
  );
  await writeFile(
    join(dir, 'log4j2.properties'),
    'rootLogger.level=WARN\nrootLogger.appenderRef.out.ref=OUT\nappender.out.type=Console\nappender.out.name=OUT\n' +
      'appender.out.layout.type=PatternLayout\nappender.out.layout.pattern=[%d] %p %m (%c)%n\n' +
      Object.entries(options.logLevels ?? {})
        .map(([name, level], i) => `logger.l${i}.name=${name}\nlogger.l${i}.level=${level}\n`)
        .join(''),
  );
  const jvm = [
    '-Xms128m',
    '-Xmx384m',
    '-XX:+UseSerialGC',
    '-XX:TieredStopAtLevel=1',
    `-Dlog4j2.configurationFile=${join(dir, 'log4j2.properties')}`,
    '-Dorg.slf4j.simpleLogger.defaultLogLevel=warn',
    '-Dorg.slf4j.simpleLogger.showDateTime=true',
    "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSS",
    ...Object.entries(options.logLevels ?? {}).map(
      ([name, level]) => `-Dorg.slf4j.simpleLogger.log.${name}=${level.toLowerCase()}`,
    ),
    ...(options.jvmOptions ?? []),
    '-cp',
    classpath,
  ];
  await promisify(execFile)(javaBinary(), [
    ...jvm,
    'kafka.tools.StorageTool',
    'format',
    '-t',
    clusterId(),
    '-c',
    properties,
  ]);
  const logFile = join(dir, 'kafka.log');
  const log = () => readFileSync(logFile, 'utf8');
  let child: ChildProcess | undefined;

  const kill = async () => {
    if (child === undefined || !running(child)) return;
    child.kill('SIGKILL');
    await exited(child);
  };
  const stop = async () => {
    if (child !== undefined && running(child)) {
      child.kill('SIGTERM');
      const current = child;
      const killer = setTimeout(() => current.kill('SIGKILL'), 10_000);
      await exited(child);
      clearTimeout(killer);
    }
    await rm(dir, { recursive: true, force: true });
  };
  const launch = async () => {
    if (child !== undefined && running(child)) throw new Error(`the ${options.name} test broker is running`);
    const current = spawn(javaBinary(), [...jvm, 'kafka.Kafka', properties], {
      stdio: ['ignore', openSync(logFile, 'a'), openSync(logFile, 'a')],
    });
    child = current;
    const deadline = Date.now() + (options.startTimeoutMs ?? 45_000);
    for (;;) {
      if (await answers(`${HOST}:${plainPort}`)) return;
      if (!running(current) || Date.now() > deadline) {
        const why = running(current) ? 'did not answer in time' : `exited (${current.exitCode})`;
        const tail = log().split('\n').slice(-30).join('\n');
        await stop();
        throw new Error(`the ${options.name} test broker ${why}; last lines of its log:\n${tail}`);
      }
      await new Promise((resolveWait) => setTimeout(resolveWait, 250));
    }
  };

  await launch();
  return {
    broker: `${HOST}:${plainPort}`,
    listeners: Object.fromEntries(extra.map((l) => [l.name, `${HOST}:${l.port}`])),
    log,
    dataDir: join(dir, 'data'),
    kill,
    restart: launch,
    stop,
    transactions: async (...args) => {
      const { stdout } = await promisify(execFile)(javaBinary(), [
        '-Xmx256m',
        '-XX:TieredStopAtLevel=1',
        `-Dlog4j2.configurationFile=${join(dir, 'log4j2.properties')}`,
        '-cp',
        classpath,
        'org.apache.kafka.tools.TransactionsCommand',
        '--bootstrap-server',
        `${HOST}:${plainPort}`,
        ...args,
      ]);
      return stdout;
    },
  };
}
