/**
 * `scripts/stack.mjs check`: what the local JVM stack would miss on this machine, said before anything is fetched
 * or started (a machine with Java 17 only used to fetch Kafka from Maven Central, start it, and only then fail
 * on the registry's Java 21). The machine is simulated: a PATH with only the tools the test puts there, no
 * system JDKs, an empty cache.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const script = resolve(import.meta.dirname, '../../../scripts/stack.mjs');
const dirs: string[] = [];

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * A bin folder holding a fake `java` that reports `major` (none when undefined), and nothing else: node's own
 * folder stays off the PATH, since where Node is installed with the system's packages (/usr/bin), the real
 * `java` and `mvn` of a machine that runs the dev stack sit beside it, and the simulated machine would find them
 * (regression: the first two tests failed on such machines). stack.mjs runs by process.execPath and needs no
 * `node` on the PATH.
 */
function machine(major: number | undefined): NodeJS.ProcessEnv {
  const dir = mkdtempSync(join(tmpdir(), 'stack-check-'));
  dirs.push(dir);
  if (major !== undefined) {
    writeFileSync(join(dir, 'java'), `#!/bin/sh\necho 'openjdk version "${major}.0.2" 2024-01-16' >&2\n`);
    chmodSync(join(dir, 'java'), 0o755);
  }
  return {
    PATH: dir,
    CALLS_STACK_HOME: join(dir, 'cache'),
    STACK_JVM_ROOT: join(dir, 'no-jvms'),
  };
}

function check(env: NodeJS.ProcessEnv): { status: number | null; problems: string[] } {
  const run = spawnSync(process.execPath, [script, 'check', '--json'], { env, encoding: 'utf8' });
  return { status: run.status, problems: (JSON.parse(run.stdout) as { problems: string[] }).problems };
}

describe('stack.mjs check', () => {
  it('names the Java 21 package and STACK_JAVA_HOME when only Java 17 is there, and Maven when it is missing', () => {
    const { status, problems } = check(machine(17));
    expect(status).toBe(1);
    expect(problems).toEqual([
      expect.stringMatching(/Maven.*apt-get install maven/),
      expect.stringMatching(
        /Apicurio Registry 3\.3 needs Java 21\+.*openjdk-21-jre-headless.*STACK_JAVA_HOME/,
      ),
    ]);
  });

  it('asks for Java 17 for Kafka as well when there is no Java at all', () => {
    expect(check(machine(undefined)).problems).toEqual(
      expect.arrayContaining([expect.stringMatching(/Kafka needs Java 17\+.*openjdk-17-jre-headless/)]),
    );
  });

  it('finds nothing missing with Java 21 found through STACK_JAVA_HOME and artifacts already cached', () => {
    const env = machine(undefined);
    const javaHome = mkdtempSync(join(tmpdir(), 'stack-check-jdk-'));
    dirs.push(javaHome);
    const bin = join(javaHome, 'bin');
    mkdirSync(bin, { recursive: true });
    writeFileSync(join(bin, 'java'), `#!/bin/sh\necho 'openjdk version "21.0.5" 2024-10-15' >&2\n`);
    chmodSync(join(bin, 'java'), 0o755);
    // Cached artifacts: Maven is not needed any more.
    const cache = env.CALLS_STACK_HOME!;
    for (const [folder, file] of [
      ['kafka-4.4.0', 'classpath.txt'],
      ['apicurio-3.3.3', 'quarkus-run.jar'],
    ] as const) {
      mkdirSync(join(cache, folder), { recursive: true });
      writeFileSync(join(cache, folder, file), '');
    }
    expect(check({ ...env, STACK_JAVA_HOME: javaHome })).toEqual({ status: 0, problems: [] });
  });
});
