#!/usr/bin/env node
// The local stack without Docker: a single-node Apache Kafka in KRaft mode and an Apicurio
// schema registry (Confluent-compatible API), both run as plain JVM processes on 127.0.0.1.
//
// Artifacts come from Maven Central through Maven itself (tarball downloads from other sites do
// not work on our machines): Kafka's jars resolved into a classpath, Apicurio's Quarkus fast-jar
// distribution unpacked once into the cache folder. Nothing here is a fake: the tests that use
// this stack talk to the same broker and registry code that production runs.
//
// Usage: node scripts/stack.mjs <check|fetch|up|down|status> [--json] [--kafka-version V]
//   check   say what is missing to run the stack here (Java 17+ for Kafka, 21+ for the registry, Maven), fetch nothing
//   fetch   resolve and cache the artifacts only (CI's install step)
//   up      start what is not running (idempotent), wait until both answer, print the endpoints
//   down    stop only the processes this script started
//   status  print what is running
//   kill-kafka | start-kafka        kill -9 the broker / start it again on its data (fault injection)
//   stop-registry | start-registry  stop the registry (SIGTERM) / start it again on its data
// Environment: CALLS_STACK_HOME (cache folder, default <repo>/.cache/stack), STACK_KAFKA_VERSION
// (default 4.4.0, the current 4.x release; 3.9.2, the last 3.x, stays tested by CI), STACK_KAFKA_PORT (19092), STACK_CONTROLLER_PORT (19093),
// STACK_REGISTRY_PORT (18081; its management interface uses the next port), STACK_REGISTRY_VERSION (3.3.3),
// STACK_STATE_DIR (state, logs and data of the running stack, default the cache folder: a second stack on
// other ports, e.g. the chaos suite's, runs from the same checkout with its own).
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const command = args[0] ?? 'status';
const json = args.includes('--json');
const flag = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};

const home = resolve(process.env.CALLS_STACK_HOME ?? join(repoRoot, '.cache', 'stack'));
const kafkaVersion = flag('--kafka-version') ?? process.env.STACK_KAFKA_VERSION ?? '4.4.0';
const registryVersion = process.env.STACK_REGISTRY_VERSION ?? '3.3.3';
const kafkaPort = Number(process.env.STACK_KAFKA_PORT ?? 19092);
const controllerPort = Number(process.env.STACK_CONTROLLER_PORT ?? 19093);
const registryPort = Number(process.env.STACK_REGISTRY_PORT ?? 18081);
const stateHome = resolve(process.env.STACK_STATE_DIR ?? home);
const stateFile = join(stateHome, 'state.json');
const logDir = join(stateHome, 'logs');
const host = '127.0.0.1';

const endpoints = {
  brokers: `${host}:${kafkaPort}`,
  registryUrl: `http://${host}:${registryPort}/apis/ccompat/v7`,
};

// kafkajs 2.2.4 (used by the readiness probe below) passes a negative delay to setTimeout on idle connections
// (tulios/kafkajs#1751; the connector patches it in src/kafka/client/kafkajs-idle-timer-fix.ts). Node >= 23 prints a
// TimeoutNegativeWarning for it: harmless here, and not something a first run should show. Other warnings still print.
process.removeAllListeners('warning');
process.on('warning', (warning) => {
  if (warning.name !== 'TimeoutNegativeWarning')
    process.stderr.write(`${warning.name}: ${warning.message}\n`);
});

function log(message) {
  process.stderr.write(`stack: ${message}\n`);
}

function fail(message) {
  log(message);
  process.exit(1);
}

function javaVersionOf(javaBin) {
  const probe = spawnSync(javaBin, ['-version'], { encoding: 'utf8' });
  if (probe.error) return 0;
  return Number(`${probe.stdout}${probe.stderr}`.match(/version "(\d+)/)?.[1] ?? 0);
}

// What to install when a tool is missing (Debian/Ubuntu package names; any JDK of that version or later works).
const JAVA_HINT = {
  17: '`apt-get install openjdk-17-jre-headless` (or any JDK 17+), or set STACK_JAVA_HOME to its home',
  21:
    "`apt-get install openjdk-21-jre-headless` (Debian 13, Ubuntu 24.04; on Debian 12: Adoptium's `temurin-21-jre` " +
    'from packages.adoptium.net, or any JDK 21+ unpacked anywhere), or set STACK_JAVA_HOME to a JDK 21+ home',
};
const MAVEN_HINT = '`apt-get install maven` (or any Maven 3.6+ on PATH as `mvn`)';

// The java binary to run a component with: the first of STACK_JAVA_HOME, JAVA_HOME, the PATH's java
// and the JDKs under /usr/lib/jvm whose major version is at least `min`, or undefined. Kafka 3.9 and 4.x
// need 17; Apicurio Registry 3.3 is built for 21, so on a machine whose default is 17 it needs a second JDK.
// STACK_JVM_ROOT: where system JDKs live (Debian's /usr/lib/jvm); the tests point it elsewhere.
const jvmRoot = process.env.STACK_JVM_ROOT ?? '/usr/lib/jvm';

function javaAtLeast(min) {
  const homes = [process.env.STACK_JAVA_HOME, process.env.JAVA_HOME].filter(Boolean);
  let jvmDirs = [];
  try {
    jvmDirs = readdirSync(jvmRoot).map((d) => join(jvmRoot, d));
  } catch {
    /* no system JDKs */
  }
  const candidates = [
    ...homes.map((h) => join(h, 'bin', 'java')),
    'java',
    ...jvmDirs.map((d) => join(d, 'bin', 'java')),
  ];
  return candidates.find((bin) => javaVersionOf(bin) >= min);
}

function findJava(min) {
  const bin = javaAtLeast(min);
  if (bin === undefined) fail(javaProblem(min));
  return bin;
}

function javaProblem(min) {
  const why = min >= 21 ? 'Apicurio Registry 3.3 needs Java 21+' : 'Kafka needs Java 17+';
  return `${why} and none was found (looked at STACK_JAVA_HOME, JAVA_HOME, PATH, ${jvmRoot}/*): install it with ${JAVA_HINT[min]}`;
}

function mavenPresent() {
  return !spawnSync('mvn', ['-version'], { encoding: 'utf8' }).error;
}

// Maven runs with its stdout sent to our stderr (stdio fd 2): our stdout carries only the endpoints, which
// `up --json` callers parse.
function requireMaven(why) {
  if (!mavenPresent())
    fail(`Maven (mvn) is not installed; it is needed to ${why}: install it with ${MAVEN_HINT}`);
}

// Everything missing to start (or, with `fetchOnly`, to fetch) the components asked for, checked before any
// download or process start: a machine without Java 21 must hear so at once, not after Maven fetched Kafka.
function missingFor({ kafka, registry, fetchOnly = false }) {
  const problems = [];
  const needsMaven =
    (kafka && !existsSync(join(home, `kafka-${kafkaVersion}`, 'classpath.txt'))) ||
    (registry && !existsSync(join(home, `apicurio-${registryVersion}`, 'quarkus-run.jar')));
  if (needsMaven && !mavenPresent())
    problems.push(
      `Maven (mvn) is needed to fetch Kafka and Apicurio Registry from Maven Central (first run only): install it with ${MAVEN_HINT}`,
    );
  if (!fetchOnly && kafka && javaAtLeast(17) === undefined) problems.push(javaProblem(17));
  if (!fetchOnly && registry && javaAtLeast(21) === undefined) problems.push(javaProblem(21));
  return problems;
}

function preflight(needs) {
  const problems = missingFor(needs);
  if (problems.length > 0)
    fail(`cannot ${needs.fetchOnly ? 'fetch' : 'start'} the local stack:\n  - ${problems.join('\n  - ')}`);
}

// ---------- artifacts ----------

function isKafka4() {
  return Number(kafkaVersion.split('.')[0]) >= 4;
}

function kafkaPom() {
  // Kafka 3.x logs through slf4j 1 + reload4j; Kafka 4.x moved to slf4j 2 + log4j2.
  const logging = isKafka4()
    ? [
        ['org.apache.logging.log4j', 'log4j-slf4j2-impl', '2.24.3'],
        ['org.apache.logging.log4j', 'log4j-core', '2.24.3'],
      ]
    : [['org.slf4j', 'slf4j-reload4j', '1.7.36']];
  // kafka-tools: Kafka's own admin commands (TransactionsCommand, as kafka-transactions.sh runs it), which the
  // broker-kill test uses as an operator would to end a hanging transaction.
  const deps = [
    ['org.apache.kafka', 'kafka_2.13', kafkaVersion],
    ['org.apache.kafka', 'kafka-tools', kafkaVersion],
    ...logging,
  ]
    .map(
      ([g, a, v]) =>
        `<dependency><groupId>${g}</groupId><artifactId>${a}</artifactId><version>${v}</version></dependency>`,
    )
    .join('\n    ');
  return `<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.calls-connector</groupId>
  <artifactId>kafka-stack</artifactId>
  <version>1</version>
  <dependencies>
    ${deps}
  </dependencies>
</project>
`;
}

function kafkaClasspath() {
  const dir = join(home, `kafka-${kafkaVersion}`);
  const cpFile = join(dir, 'classpath.txt');
  const pomFile = join(dir, 'pom.xml');
  // Resolved again when the dependencies changed (a cache from before kafka-tools was added).
  if (existsSync(cpFile) && existsSync(pomFile) && readFileSync(pomFile, 'utf8') === kafkaPom())
    return readFileSync(cpFile, 'utf8').trim();
  mkdirSync(dir, { recursive: true });
  writeFileSync(pomFile, kafkaPom());
  requireMaven('resolve Kafka from Maven Central');
  log(
    `resolving Kafka ${kafkaVersion} from Maven Central (first run only: about 45 MB of jars into ~/.m2, a minute or so)`,
  );
  execFileSync(
    'mvn',
    [
      '-q',
      '-B',
      '-Dstyle.color=never',
      '-f',
      join(dir, 'pom.xml'),
      'dependency:build-classpath',
      `-Dmdep.outputFile=${cpFile}`,
    ],
    {
      stdio: ['ignore', 2, 'inherit'],
    },
  );
  return readFileSync(cpFile, 'utf8').trim();
}

function registryDistribution() {
  const dir = join(home, `apicurio-${registryVersion}`);
  if (existsSync(join(dir, 'quarkus-run.jar'))) return dir;
  requireMaven('fetch Apicurio Registry from Maven Central');
  log(
    `fetching Apicurio Registry ${registryVersion} from Maven Central (first run only: a 150 MB download into ~/.m2, 170 MB unpacked here)`,
  );
  const download = join(home, 'downloads');
  mkdirSync(download, { recursive: true });
  execFileSync(
    'mvn',
    [
      '-q',
      '-B',
      '-Dstyle.color=never',
      'dependency:copy',
      `-Dartifact=io.apicurio:apicurio-registry-app:${registryVersion}:tar.gz:all`,
      `-DoutputDirectory=${download}`,
    ],
    { stdio: ['ignore', 2, 'inherit'], cwd: home },
  );
  const tarball = join(download, `apicurio-registry-app-${registryVersion}-all.tar.gz`);
  mkdirSync(dir, { recursive: true });
  execFileSync('tar', ['-xzf', tarball, '-C', dir]);
  rmSync(tarball);
  return dir;
}

// ---------- processes ----------

function readState() {
  try {
    return JSON.parse(readFileSync(stateFile, 'utf8'));
  } catch {
    return {};
  }
}

function writeState(state) {
  mkdirSync(stateHome, { recursive: true });
  writeFileSync(stateFile, JSON.stringify(state, null, 2));
}

function alive(pid) {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function portOpen(port) {
  return new Promise((resolvePort) => {
    const socket = createConnection({ host, port });
    socket.setTimeout(1000);
    socket.once('connect', () => {
      socket.destroy();
      resolvePort(true);
    });
    socket.once('error', () => resolvePort(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolvePort(false);
    });
  });
}

function startDetached(name, cmd, cmdArgs, cwd) {
  mkdirSync(logDir, { recursive: true });
  const logFile = join(logDir, `${name}.log`);
  const fd = openSync(logFile, 'a');
  const child = spawn(cmd, cmdArgs, { cwd, detached: true, stdio: ['ignore', fd, fd] });
  child.unref();
  return { pid: child.pid, logFile };
}

async function waitFor(what, check, timeoutMs, pid, logFile) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    if (pid && !alive(pid)) {
      const tail = readFileSync(logFile, 'utf8').split('\n').slice(-30).join('\n');
      fail(`${what} exited during start-up. Last lines of ${logFile}:\n${tail}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  fail(`${what} did not answer within ${timeoutMs / 1000}s; see ${logFile}`);
}

async function kafkaAnswers() {
  if (!(await portOpen(kafkaPort))) return false;
  const { Kafka, logLevel } = await import('kafkajs');
  const admin = new Kafka({
    brokers: [endpoints.brokers],
    logLevel: logLevel.NOTHING,
    retry: { retries: 0 },
  }).admin();
  try {
    await admin.connect();
    const cluster = await admin.describeCluster();
    return cluster.brokers.length > 0;
  } catch {
    return false;
  } finally {
    await admin.disconnect().catch(() => {});
  }
}

async function registryAnswers() {
  try {
    const res = await fetch(`${endpoints.registryUrl}/subjects`, { signal: AbortSignal.timeout(2000) });
    return res.status === 200;
  } catch {
    return false;
  }
}

// keepData: a restart after a crash (start-kafka), on the storage of the killed broker.
async function startKafka({ keepData = false } = {}) {
  const classpath = kafkaClasspath();
  const dir = join(stateHome, `kafka-${kafkaVersion}`);
  mkdirSync(dir, { recursive: true });
  const dataDir = join(stateHome, 'kafka-data');
  // A throwaway broker: fresh storage on every `up`, so tests never see an earlier run's topics.
  if (!keepData) rmSync(dataDir, { recursive: true, force: true });
  const props = [
    'process.roles=broker,controller',
    'node.id=1',
    `controller.quorum.voters=1@${host}:${controllerPort}`,
    `listeners=PLAINTEXT://${host}:${kafkaPort},CONTROLLER://${host}:${controllerPort}`,
    `advertised.listeners=PLAINTEXT://${host}:${kafkaPort}`,
    'controller.listener.names=CONTROLLER',
    'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    'inter.broker.listener.name=PLAINTEXT',
    `log.dirs=${dataDir}`,
    'num.partitions=3',
    // One node: without these, transactions and consumer groups hang waiting for replicas.
    'offsets.topic.replication.factor=1',
    'offsets.topic.num.partitions=5',
    'transaction.state.log.replication.factor=1',
    'transaction.state.log.min.isr=1',
    'transaction.state.log.num.partitions=5',
    'group.initial.rebalance.delay.ms=0',
    'auto.create.topics.enable=false',
    // Let compaction act quickly enough to be observable in tests.
    'log.cleaner.backoff.ms=1000',
  ];
  writeFileSync(join(dir, 'server.properties'), props.join('\n') + '\n');
  writeFileSync(
    join(dir, 'log4j.properties'),
    [
      'log4j.rootLogger=INFO, stdout',
      'log4j.appender.stdout=org.apache.log4j.ConsoleAppender',
      'log4j.appender.stdout.layout=org.apache.log4j.PatternLayout',
      'log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n',
      'log4j.logger.kafka=INFO',
      'log4j.logger.org.apache.kafka=WARN',
    ].join('\n') + '\n',
  );
  writeFileSync(
    join(dir, 'log4j2.properties'),
    [
      'rootLogger.level=INFO',
      'rootLogger.appenderRef.stdout.ref=STDOUT',
      'appender.stdout.type=Console',
      'appender.stdout.name=STDOUT',
      'appender.stdout.layout.type=PatternLayout',
      'appender.stdout.layout.pattern=[%d] %p %m (%c)%n',
    ].join('\n') + '\n',
  );
  const jvm = [
    '-Xms256m',
    '-Xmx768m',
    '-XX:+UseG1GC',
    `-Dlog4j.configuration=file:${join(dir, 'log4j.properties')}`,
    `-Dlog4j2.configurationFile=${join(dir, 'log4j2.properties')}`,
    '-cp',
    classpath,
  ];
  const clusterId = 'q1Sh-9_ISia_zwGINzRvyQ';
  const java = findJava(17);
  if (!keepData)
    execFileSync(
      java,
      [...jvm, 'kafka.tools.StorageTool', 'format', '-t', clusterId, '-c', join(dir, 'server.properties')],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
  return startDetached('kafka', java, [...jvm, 'kafka.Kafka', join(dir, 'server.properties')], dir);
}

// Storage in an H2 file (fresh on every `up`), so that a registry stopped and started keeps its schema ids.
function startRegistry({ keepData = false } = {}) {
  const dir = registryDistribution();
  const dataDir = join(stateHome, 'registry-data');
  if (!keepData) rmSync(dataDir, { recursive: true, force: true });
  return startDetached(
    'registry',
    findJava(21),
    [
      '-Xms128m',
      '-Xmx512m',
      `-Dquarkus.http.port=${registryPort}`,
      `-Dquarkus.http.host=${host}`,
      '-Dquarkus.log.level=WARN',
      // Quarkus' management interface binds 0.0.0.0:9000 by default: a second registry (or anything else on
      // 9000) would stop this one from starting. Keep it on loopback, next to the registry's own port.
      `-Dquarkus.management.port=${registryPort + 1}`,
      `-Dquarkus.management.host=${host}`,
      `-Dapicurio.datasource.url=jdbc:h2:file:${join(dataDir, 'registry')}`,
      '-jar',
      'quarkus-run.jar',
    ],
    dir,
  );
}

// `foreign`: the broker or the registry is another checkout's, which `down` here leaves running.
function printEndpoints(state, foreign = false) {
  if (json) {
    process.stdout.write(
      JSON.stringify({ ...endpoints, kafkaVersion: state.kafka?.version, home, foreign }) + '\n',
    );
  } else {
    process.stdout.write(
      `KAFKA_BROKERS=${endpoints.brokers}\nSCHEMA_REGISTRY_URL=${endpoints.registryUrl}\n`,
    );
  }
}

async function up() {
  const state = readState();
  const started = Date.now();

  const kafkaRunning = alive(state.kafka?.pid) && (await kafkaAnswers());
  if (kafkaRunning && state.kafka.version !== kafkaVersion)
    fail(
      `Kafka ${state.kafka.version} is running (pid ${state.kafka.pid}), not ${kafkaVersion}: run \`node scripts/stack.mjs down\` first`,
    );
  const registryRunning = alive(state.registry?.pid) && (await registryAnswers());
  // A broker or registry this checkout did not start (another checkout's stack, say) that answers correctly is
  // used as it is, and left alone by `down`; anything else on the port is an error.
  const kafkaForeign = !kafkaRunning && (await portOpen(kafkaPort));
  const registryForeign = !registryRunning && (await portOpen(registryPort));
  if (kafkaForeign && !(await kafkaAnswers()))
    fail(
      `port ${kafkaPort} is taken by something that is not a Kafka broker; stop it or set STACK_KAFKA_PORT`,
    );
  if (registryForeign && !(await registryAnswers()))
    fail(
      `port ${registryPort} is taken by something that is not a schema registry; stop it or set STACK_REGISTRY_PORT`,
    );
  if (kafkaForeign)
    log(`a Kafka broker this checkout did not start answers on ${endpoints.brokers}: using it`);
  if (registryForeign)
    log(`a registry this checkout did not start answers on ${endpoints.registryUrl}: using it`);

  preflight({ kafka: !kafkaRunning && !kafkaForeign, registry: !registryRunning && !registryForeign });
  // Both JVMs start in parallel: warm start is bounded by the slower of the two.
  const waits = [];
  if (kafkaRunning) log(`Kafka already running (pid ${state.kafka.pid})`);
  else if (!kafkaForeign) {
    const proc = await startKafka();
    state.kafka = { ...proc, version: kafkaVersion, port: kafkaPort };
    waits.push(waitFor(`Kafka ${kafkaVersion}`, kafkaAnswers, 90_000, proc.pid, proc.logFile));
  }
  if (registryRunning) log(`registry already running (pid ${state.registry.pid})`);
  else if (!registryForeign) {
    const proc = startRegistry();
    state.registry = { ...proc, version: registryVersion, port: registryPort };
    waits.push(
      waitFor(`Apicurio Registry ${registryVersion}`, registryAnswers, 120_000, proc.pid, proc.logFile),
    );
  }
  writeState(state);
  await Promise.all(waits);
  if (waits.length > 0) log(`up in ${((Date.now() - started) / 1000).toFixed(1)}s; logs in ${logDir}`);
  printEndpoints(state, kafkaForeign || registryForeign);
}

async function stop(name, entry) {
  if (!alive(entry?.pid)) return;
  log(`stopping ${name} (pid ${entry.pid})`);
  try {
    process.kill(-entry.pid, 'SIGTERM');
  } catch {
    process.kill(entry.pid, 'SIGTERM');
  }
  const deadline = Date.now() + 20_000;
  while (alive(entry.pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  if (alive(entry.pid)) process.kill(-entry.pid, 'SIGKILL');
}

async function down() {
  const state = readState();
  await Promise.all([stop('Kafka', state.kafka), stop('registry', state.registry)]);
  rmSync(stateFile, { force: true });
  log('stopped');
}

async function status() {
  const state = readState();
  const kafka = alive(state.kafka?.pid) && (await kafkaAnswers());
  const registry = alive(state.registry?.pid) && (await registryAnswers());
  if (json) {
    process.stdout.write(JSON.stringify({ kafka, registry, ...endpoints }) + '\n');
  } else {
    process.stdout.write(
      `kafka:    ${kafka ? `up (pid ${state.kafka.pid}, ${state.kafka.version}) at ${endpoints.brokers}` : 'down'}\n` +
        `registry: ${registry ? `up (pid ${state.registry.pid}) at ${endpoints.registryUrl}` : 'down'}\n`,
    );
  }
  process.exitCode = kafka && registry ? 0 : 3;
}

// Fault injection for the chaos suite (tools/chaos): the broker killed and restarted on its data, the
// registry stopped and started on its data. Only processes this script started are touched.
async function restart(name, kill, start, answers, what) {
  const state = readState();
  if (kill) {
    if (name === 'kafka' && alive(state.kafka?.pid)) {
      log(`kill -9 Kafka (pid ${state.kafka.pid})`);
      process.kill(-state.kafka.pid, 'SIGKILL');
      while (alive(state.kafka.pid)) await new Promise((r) => setTimeout(r, 50));
    } else if (name === 'registry') await stop('registry', state.registry);
    return;
  }
  const proc = await start({ keepData: true });
  state[name] = { ...state[name], ...proc };
  writeState(state);
  await waitFor(what, answers, 120_000, proc.pid, proc.logFile);
  printEndpoints(state);
}

switch (command) {
  case 'kill-kafka':
  case 'start-kafka':
    await restart('kafka', command === 'kill-kafka', startKafka, kafkaAnswers, `Kafka ${kafkaVersion}`);
    break;
  case 'stop-registry':
  case 'start-registry':
    await restart('registry', command === 'stop-registry', startRegistry, registryAnswers, 'the registry');
    break;
  case 'check': {
    // What `up` would miss on this machine, without starting or fetching anything (the test harness and the
    // demo ask before they choose this stack). Exit 0 when nothing is missing.
    const problems = missingFor({ kafka: true, registry: true });
    if (json) process.stdout.write(JSON.stringify({ ok: problems.length === 0, problems }) + '\n');
    else for (const problem of problems) log(problem);
    process.exitCode = problems.length === 0 ? 0 : 1;
    break;
  }
  case 'fetch':
    preflight({ kafka: true, registry: true, fetchOnly: true });
    kafkaClasspath();
    registryDistribution();
    log(`artifacts cached in ${home}`);
    break;
  case 'up':
    await up();
    break;
  case 'down':
    await down();
    break;
  case 'status':
    await status();
    break;
  default:
    fail(
      `unknown command "${command}"; use check, fetch, up, down, status, kill-kafka, start-kafka, stop-registry or start-registry`,
    );
}
