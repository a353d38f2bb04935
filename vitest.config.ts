import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

// Three test projects, by what they need (the product's tests and the workspace packages' alike):
// - unit:        pure code, no sockets.
// - component:   real servers started in-process on loopback (sandbox over HTTPS, API client, OAuth); no Kafka.
// - integration: a real Kafka broker (KRaft) and a real schema registry, chosen by test/support/global-setup.ts.
export default defineConfig({
  // The workspace packages (packages/*) by their "source" export: tests run their TypeScript, never a stale build.
  // (Vite's default server conditions, plus "source".)
  ssr: { resolve: { conditions: ['module', 'node', 'development|production', 'source'] } },
  test: {
    // Unit and component files run in worker threads, integration files in one child process: vitest runs its
    // pools side by side, so the unit and component files (about 100 s on a 2-core CI machine) no longer wait in
    // front of the integration files (which, in one forks pool, they did). The threads take all cores but two (at
    // least one thread): one stays with the integration file, one with the brokers it drives.
    // The integration project's forks (below): two files at a time, whatever the core count.
    poolOptions: {
      threads: { maxThreads: Math.max(1, availableParallelism() - 2), minThreads: 1 },
      forks: { maxForks: 2, minForks: 1 },
    },
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts', 'packages/*/test/unit/**/*.test.ts'],
          environment: 'node',
          pool: 'threads',
        },
      },
      {
        extends: true,
        test: {
          name: 'component',
          include: ['test/component/**/*.test.ts', 'packages/*/test/component/**/*.test.ts'],
          environment: 'node',
          pool: 'threads',
          testTimeout: 30_000,
          hookTimeout: 30_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          environment: 'node',
          globalSetup: ['test/support/global-setup.ts'],
          setupFiles: ['test/support/kafkajs-fix.setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          // Two integration files at a time: their topics, groups and sandboxes are their own, and most of their time
          // is spent waiting on brokers, so a second fork on the one broker and registry shortens the run.
          pool: 'forks',
          poolOptions: { forks: { singleFork: false } },
        },
      },
      // Reproductions of rare faults (test/repro/, docs/reliability.md): they kill a broker of their own at timed
      // moments and meet the fault only some runs, so they are run on purpose, many times, never in `npm test`:
      // CALLS_REPRO=1 npx vitest run --project repro.
      ...(process.env['CALLS_REPRO'] === '1'
        ? [
            {
              extends: true as const,
              test: {
                name: 'repro',
                include: ['test/repro/**/*.test.ts'],
                // Kafka's own bugs, reproduced with no connector code: their project, below.
                exclude: ['test/repro/kafka-bugs/**'],
                environment: 'node',
                globalSetup: ['test/support/global-setup.ts'],
                setupFiles: ['test/support/kafkajs-fix.setup.ts'],
                testTimeout: 120_000,
                hookTimeout: 180_000,
                pool: 'forks' as const,
                poolOptions: { forks: { singleFork: true } },
              },
            },
            // Kafka's bugs that the connector's reproductions met, reproduced with kafkajs and a bare broker only
            // (docs/kafka-hanging-transaction.md): they fail while the broker has the bug.
            // CALLS_REPRO=1 npx vitest run --project kafka-bugs.
            {
              extends: true as const,
              test: {
                name: 'kafka-bugs',
                include: ['test/repro/kafka-bugs/**/*.test.ts'],
                environment: 'node',
                testTimeout: 240_000,
                hookTimeout: 180_000,
                pool: 'forks' as const,
                poolOptions: { forks: { singleFork: true } },
              },
            },
          ]
        : []),
    ],
  },
});
