// Lint rules: typescript-eslint's type-aware recommended set, a ban on `any`, and the architecture's
// boundaries (docs/architecture.md): dependencies point one way, cli -> runtime -> adapters -> sync core,
// with no import cycles. These rules skip type-only imports; test/unit/architecture/import-graph.test.ts checks
// the same direction and the absence of circles with them included.
import js from '@eslint/js';
import { createNodeResolver, importX } from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

/**
 * Adapters and wiring: what the sync core, and the leaves below it, never import. config and metrics are
 * adapters too, not leaves: they may import the core's types and values (config the stopped-location backoff's
 * defaults, sync/health-rule.ts; metrics its backfill figures), and neither the core nor a leaf (errors, logging,
 * time, json, secrets) imports them.
 */
const ADAPTERS = [
  'api',
  'auth',
  'kafka',
  'metrics',
  'ops',
  'config',
  'runtime',
  'cli',
  'demo',
  'sandbox',
  'webhooks',
];
/**
 * The adapters' shared leaves: what two adapters both use, so that neither imports the other (https: the
 * verifying HTTPS dispatcher of auth/ and kafka/). An adapter or the wiring may import them; they import no
 * adapter and not the core, and, unlike the leaves below the core, may talk to the adapter libraries.
 */
const ADAPTER_LEAVES = ['https'];
/** Libraries only adapters talk to. */
const ADAPTER_LIBRARIES = [
  'kafkajs',
  '@kafkajs/*',
  'avsc',
  'undici',
  'prom-client',
  'zod',
  'testcontainers',
  '@testcontainers/*',
];

const restrict = (patterns) => ['error', { patterns }];
const adapterImports = {
  group: [...ADAPTERS, ...ADAPTER_LEAVES].map((folder) => `**/${folder}/*`),
  message:
    'The sync core and the leaves (errors, logging, time, json, secrets) import no adapter: define a port in src/sync/ports.ts.',
};
const adapterLeafImports = {
  group: [...ADAPTERS.map((folder) => `**/${folder}/*`), '**/sync/*', '**/sync/**'],
  message: "An adapters' leaf (https) imports neither an adapter nor the core: it is what adapters share.",
};
const leafImports = {
  group: ['**/sync/*', '**/sync/**'],
  message: 'A leaf (errors, logging, time, json, secrets) imports neither the core nor an adapter.',
};
const adapterLibraries = { group: ADAPTER_LIBRARIES, message: 'Only adapters talk to this library.' };
const cliImports = {
  group: ['**/cli/*', '**/cli/**'],
  message: 'Nothing imports the CLI: it is the top of the graph.',
};
const devTooling = {
  group: ['**/tools/**'],
  allowTypeImports: true,
  message:
    'The product never loads the dev tooling statically: it is not in the published package (see demo.ts).',
};
const workspacePackagesByPath = {
  group: ['**/packages/**', '@calls-connector/*/**'],
  message:
    'The product imports a workspace package by its name and public entry only (`@calls-connector/sandbox`), ' +
    'never by a path into packages/ nor a deep path: that is what the built and published package resolves.',
};
const productCode = {
  group: [
    '**/src/**',
    '**/dist/**',
    'calls-connector',
    'calls-connector/**',
    '../../*/**',
    '@calls-connector/*/**',
  ],
  message:
    'A workspace package (packages/*) imports nothing of the product (share code through a workspace package), ' +
    'and another workspace package only by its name and public entry (`@calls-connector/self-signed`).',
};

/**
 * Time is the injected Clock (src/time/clock.ts: now, sleep, and the timers built on sleep), so tests drive it.
 * Files still reading the wall clock or starting raw timers, each for a reason:
 */
const RAW_TIME_EXCEPTIONS = [
  // kafkajs' own RequestQueue compares with Date.now(); the patch must read the same clock.
  'src/kafka/client/kafkajs-idle-timer-fix.ts',
  // The demo's live view and run names: wall-clock by nature.
  'src/demo/demo.ts',
];
// Not excepted: src/time/ itself, where the Clock and wallTimer (the one raw timer, named so) live.
const clockMessage = 'Use the injected Clock (src/time/clock.ts): tests cannot drive this.';
const rawTime = {
  'no-restricted-globals': [
    'error',
    { name: 'setTimeout', message: `${clockMessage} (startTimer, withTimeout, clock.sleep)` },
    { name: 'setInterval', message: `${clockMessage} (a loop of clock.sleep)` },
  ],
  'no-restricted-syntax': [
    'error',
    {
      selector: "MemberExpression[object.name='Date'][property.name='now']",
      message: `${clockMessage} (clock.now())`,
    },
    {
      selector: "NewExpression[callee.name='Date'][arguments.length=0]",
      message: `${clockMessage} (new Date(clock.now()))`,
    },
    {
      selector: "MemberExpression[object.name='AbortSignal'][property.name='timeout']",
      message: `${clockMessage} (timeoutSignal)`,
    },
    {
      selector: 'ImportDeclaration[source.value=/^(node:)?timers(\\/promises)?$/]',
      message: `${clockMessage} (clock.sleep)`,
    },
  ],
};

export default tseslint.config(
  {
    ignores: [
      'dist/',
      'packages/*/dist/',
      'node_modules/',
      '.cache/',
      '.tools/',
      'coverage/',
      'bench/reports/',
      'examples/*/target/',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        projectService: { allowDefaultProject: ['*.js', 'scripts/*.mjs'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/require-await': 'off',
    },
  },
  // The chaos suite (tools/chaos) tests the product from outside and shares no code with it: it runs the built
  // CLI as a process, never imports src/. (tools/devstack is the stack launcher the demo loads; the product's
  // own rule below keeps it from loading tools/ statically.)
  {
    files: ['tools/chaos/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/src/**', '**/dist/**', 'calls-connector', 'calls-connector/**'],
              message: 'tools/chaos is independent of the connector: run the built CLI as a process instead.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['src/**/*.ts', 'packages/*/src/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      // Parse the .ts files imports lead to (ESM specifiers end in .js), so no-cycle sees the whole graph.
      'import-x/extensions': ['.ts', '.js'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/resolver-next': [
        createNodeResolver({
          extensions: ['.ts', '.js'],
          extensionAlias: { '.js': ['.ts', '.js'] },
          // Workspace packages by their sources (the "source" export), as TypeScript and the tests see them.
          conditionNames: ['source', 'import', 'node', 'default'],
        }),
      ],
    },
    rules: {
      'import-x/no-cycle': 'error',
      'no-restricted-imports': restrict([cliImports, workspacePackagesByPath, devTooling]),
    },
  },
  {
    files: ['src/sync/**/*.ts'],
    rules: { 'no-restricted-imports': restrict([adapterImports, adapterLibraries, devTooling]) },
  },
  {
    files: [
      'src/time/**/*.ts',
      'src/errors/**/*.ts',
      'src/logging/**/*.ts',
      'src/json/**/*.ts',
      'src/secrets/**/*.ts',
    ],
    rules: { 'no-restricted-imports': restrict([adapterImports, adapterLibraries, leafImports, devTooling]) },
  },
  {
    files: ADAPTER_LEAVES.map((folder) => `src/${folder}/**/*.ts`),
    rules: {
      'no-restricted-imports': restrict([
        adapterLeafImports,
        cliImports,
        workspacePackagesByPath,
        devTooling,
      ]),
    },
  },
  {
    files: ['src/cli/**/*.ts'],
    rules: { 'no-restricted-imports': restrict([workspacePackagesByPath, devTooling]) },
  },
  // kafkajs stays behind the Kafka client port (src/kafka/client/port.ts), so that a second client can be added
  // under src/kafka/ alone. A rule of its own (typescript-eslint's variant), so that it adds to each folder's
  // no-restricted-imports instead of replacing it. Tests and tools may use kafkajs directly.
  {
    files: ['src/**/*.ts'],
    ignores: ['src/kafka/**'],
    rules: {
      '@typescript-eslint/no-restricted-imports': restrict([
        {
          group: ['kafkajs', 'kafkajs/*'],
          message: 'Only src/kafka/ imports kafkajs: use the client port (src/kafka/client/port.ts).',
        },
      ]),
    },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/time/**', ...RAW_TIME_EXCEPTIONS],
    rules: rawTime,
  },
  {
    files: ['packages/*/src/**/*.ts'],
    rules: { 'no-restricted-imports': restrict([productCode, devTooling]) },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        fetch: 'readonly',
        AbortSignal: 'readonly',
      },
    },
  },
);
