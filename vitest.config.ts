import { defineConfig } from 'vitest/config';

// Three test projects, by what they need (the product's tests and the workspace packages' alike):
// - unit:        pure code, no sockets.
// - component:   real servers started in-process on loopback (sandbox over HTTPS, API client, OAuth); no Kafka.
// - integration: a real Kafka broker (KRaft) and a real schema registry, chosen by test/support/global-setup.ts.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts', 'packages/*/test/unit/**/*.test.ts'],
          environment: 'node',
        },
      },
      {
        test: {
          name: 'component',
          include: ['test/component/**/*.test.ts', 'packages/*/test/component/**/*.test.ts'],
          environment: 'node',
          testTimeout: 30_000,
          hookTimeout: 30_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          environment: 'node',
          globalSetup: ['test/support/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          // One broker, one registry, two cores: integration files run one at a time.
          pool: 'forks',
          poolOptions: { forks: { singleFork: true } },
        },
      },
    ],
  },
});
