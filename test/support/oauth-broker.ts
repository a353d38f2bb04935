/**
 * A short-lived single-node Kafka broker (KRaft) with a SASL_PLAINTEXT listener that takes OAUTHBEARER tokens
 * and validates them as managed Kafka services do (KIP-768): Kafka's own OAuthBearerValidatorCallbackHandler,
 * checking signature (JWKS), issuer, audience and expiry. Kafka 4.x fetches only URLs it is told to allow
 * (the org.apache.kafka.sasl.oauthbearer.allowed.urls system property).
 *
 * The shared stack's broker cannot be reconfigured for this, so the test starts its own, on free ports, with
 * the jars scripts/stack.mjs resolved (CALLS_STACK_HOME, STACK_KAFKA_VERSION), and stops it. A PLAINTEXT
 * listener beside it is the inter-broker listener and tells when the broker is up.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, openSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import { freeLoopbackPort } from '../../src/demo/free-port.js';
import { applyKafkajsIdleTimerFix } from '../../src/kafka/client/kafkajs-idle-timer-fix.js';

export interface OAuthBrokerOptions {
  jwksUrl: string;
  tokenUrl: string;
  issuer: string;
  audience: string;
  /** How long start-up may take before it fails with the broker's log. */
  startTimeoutMs?: number;
}

export interface OAuthBroker {
  /** host:port of the SASL_PLAINTEXT OAUTHBEARER listener. */
  saslBroker: string;
  /** The broker's log so far (WARN and above). */
  log(): string;
  stop(): Promise<void>;
}

const LISTENER_PREFIX = 'listener.name.sasl_plaintext.oauthbearer.';

function kafkaClasspath(): string {
  const repoRoot = resolve(import.meta.dirname, '../..');
  const home = resolve(process.env.CALLS_STACK_HOME ?? join(repoRoot, '.cache', 'stack'));
  const version = process.env.STACK_KAFKA_VERSION ?? '4.4.0';
  const file = join(home, `kafka-${version}`, 'classpath.txt');
  if (!existsSync(file))
    throw new Error(`no Kafka ${version} jars in ${home}: run \`node scripts/stack.mjs fetch\` first`);
  return readFileSync(file, 'utf8').trim();
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

export async function startOAuthBroker(options: OAuthBrokerOptions): Promise<OAuthBroker> {
  const classpath = kafkaClasspath();
  const dir = await mkdtemp(join(tmpdir(), 'oauth-kafka-'));
  const [plainPort, saslPort, controllerPort] = [
    await freeLoopbackPort(),
    await freeLoopbackPort(),
    await freeLoopbackPort(),
  ];
  const host = '127.0.0.1';
  const properties = join(dir, 'server.properties');
  await writeFile(
    properties,
    [
      'process.roles=broker,controller',
      'node.id=1',
      `controller.quorum.voters=1@${host}:${controllerPort}`,
      `listeners=PLAINTEXT://${host}:${plainPort},SASL_PLAINTEXT://${host}:${saslPort},CONTROLLER://${host}:${controllerPort}`,
      `advertised.listeners=PLAINTEXT://${host}:${plainPort},SASL_PLAINTEXT://${host}:${saslPort}`,
      'controller.listener.names=CONTROLLER',
      'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT',
      'inter.broker.listener.name=PLAINTEXT',
      'listener.name.sasl_plaintext.sasl.enabled.mechanisms=OAUTHBEARER',
      `${LISTENER_PREFIX}sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ;`,
      `${LISTENER_PREFIX}sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler`,
      `${LISTENER_PREFIX}sasl.oauthbearer.jwks.endpoint.url=${options.jwksUrl}`,
      `${LISTENER_PREFIX}sasl.oauthbearer.expected.audience=${options.audience}`,
      `${LISTENER_PREFIX}sasl.oauthbearer.expected.issuer=${options.issuer}`,
      `log.dirs=${join(dir, 'data')}`,
      'num.partitions=1',
      'offsets.topic.replication.factor=1',
      'offsets.topic.num.partitions=1',
      'transaction.state.log.replication.factor=1',
      'transaction.state.log.min.isr=1',
      'transaction.state.log.num.partitions=1',
      'group.initial.rebalance.delay.ms=0',
      'auto.create.topics.enable=false',
    ].join('\n') + '\n',
  );
  await writeFile(
    join(dir, 'log4j2.properties'),
    'rootLogger.level=WARN\nrootLogger.appenderRef.out.ref=OUT\nappender.out.type=Console\nappender.out.name=OUT\n' +
      'appender.out.layout.type=PatternLayout\nappender.out.layout.pattern=[%d] %p %m (%c)%n\n',
  );
  const jvm = [
    '-Xms128m',
    '-Xmx384m',
    '-XX:+UseSerialGC',
    '-XX:TieredStopAtLevel=1',
    `-Dlog4j2.configurationFile=${join(dir, 'log4j2.properties')}`,
    `-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=${options.jwksUrl},${options.tokenUrl}`,
    '-cp',
    classpath,
  ];
  await promisify(execFile)(javaBinary(), [
    ...jvm,
    'kafka.tools.StorageTool',
    'format',
    '-t',
    'oauth-test-cluster-00',
    '-c',
    properties,
  ]);
  const logFile = join(dir, 'kafka.log');
  const child = spawn(javaBinary(), [...jvm, 'kafka.Kafka', properties], {
    stdio: ['ignore', openSync(logFile, 'a'), openSync(logFile, 'a')],
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited(child);
      clearTimeout(killer);
    }
    await rm(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + (options.startTimeoutMs ?? 45_000);
  for (;;) {
    if (await answers(`${host}:${plainPort}`))
      return { saslBroker: `${host}:${saslPort}`, log: () => readFileSync(logFile, 'utf8'), stop };
    const tail = () => readFileSync(logFile, 'utf8').split('\n').slice(-30).join('\n');
    if (child.exitCode !== null || Date.now() > deadline) {
      const why = child.exitCode !== null ? `exited (${child.exitCode})` : 'did not answer in time';
      const log = tail();
      await stop();
      throw new Error(`the OAUTHBEARER test broker ${why}; last lines of its log:\n${log}`);
    }
    await new Promise((resolveWait) => setTimeout(resolveWait, 250));
  }
}
