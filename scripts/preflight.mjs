#!/usr/bin/env node
// `npm test`'s first step (`pretest`, before the build): says at once what the whole suite needs and this machine
// lacks, with how to get it, instead of failing minutes later.
// - promtool (Debian package `prometheus`): the metrics exposition and the alert rules are checked by it;
// - helm (3.x): the Helm chart's tests render it (`$HELM`, else .tools/helm/helm where .ci/run builds it, else PATH;
//   test/support/helm.ts looks in the same places);
// - a Kafka broker and a schema registry for the integration tests: KAFKA_BROKERS + SCHEMA_REGISTRY_URL, or
//   what the local JVM stack needs (asked of `scripts/stack.mjs check`: Java 21+, Maven), or a Docker engine.
//   Which of them the tests then use is decided by tools/devstack/stack-provider.ts (`stackOrder`); here
//   only whether at least one is there.
// Exit 1 with every missing piece listed; exit 0 silently otherwise.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const env = process.env;
const problems = [];

if (spawnSync('promtool', ['--version'], { encoding: 'utf8' }).error)
  problems.push(
    'promtool is not installed (it checks the metrics and the alert rules): ' +
      '`apt-get update && apt-get install -y prometheus` (Debian/Ubuntu package `prometheus`), or put a ' +
      'promtool from a Prometheus release on PATH',
  );

const builtHelm = join(here, '..', '.tools', 'helm', 'helm');
const helm = env.HELM || (existsSync(builtHelm) ? builtHelm : 'helm');
if (spawnSync(helm, ['version', '--short'], { encoding: 'utf8' }).error)
  problems.push(
    `helm is not installed (${env.HELM ? `HELM=${env.HELM} does not run` : 'the Helm chart is rendered by it'}): ` +
      'build it with `GOBIN=$PWD/.tools/helm go install helm.sh/helm/v3/cmd/helm@v3.22.0` (Go from ' +
      'https://go.dev/dl, as .ci/run does), or set HELM to a helm 3 binary',
  );

const fromEnvironment = Boolean(env.KAFKA_BROKERS && env.SCHEMA_REGISTRY_URL);
if (!fromEnvironment) {
  const only = env.CALLS_STACK ?? env.CALLS_TEST_STACK;
  const jvm =
    only === 'docker'
      ? null
      : spawnSync(process.execPath, [join(here, 'stack.mjs'), 'check', '--json'], { encoding: 'utf8' });
  const jvmProblems = jvm === null ? ['not tried (CALLS_STACK=docker)'] : problemsOf(jvm.stdout);
  const docker =
    only === 'jvm'
      ? false
      : spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], { encoding: 'utf8', timeout: 10_000 })
          .status === 0;
  if (jvmProblems.length > 0 && !docker)
    problems.push(
      'the integration tests need a Kafka broker and a schema registry, and none can be had: set KAFKA_BROKERS ' +
        'and SCHEMA_REGISTRY_URL, or give the local JVM stack what it lacks:\n' +
        jvmProblems.map((p) => `      ${p}`).join('\n') +
        (only === 'jvm' ? '' : '\n    or start a Docker engine (`docker info` failed)'),
    );
}

if (problems.length > 0) {
  process.stderr.write(`npm test cannot run on this machine yet:\n  - ${problems.join('\n  - ')}\n`);
  process.exit(1);
}

function problemsOf(stdout) {
  const line = stdout.trim().split('\n').at(-1) ?? '';
  try {
    return JSON.parse(line.slice(line.indexOf('{'))).problems ?? [];
  } catch {
    return [`scripts/stack.mjs check printed no verdict: ${stdout.slice(0, 300)}`];
  }
}
