/**
 * Entry for tests that run the real CLI in a child process (through vite-node, from the sources):
 * `node node_modules/vite-node/vite-node.mjs test/component/cli/commands/run-cli.ts -- <args>`.
 */
import { main } from '../../../../src/cli/main.js';

process.exitCode = await main([
  'node',
  'calls-connector',
  ...process.argv.slice(2).filter((a) => a !== '--'),
]);
