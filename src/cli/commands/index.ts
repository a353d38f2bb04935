/**
 * The command table. Each command lives in its own module and exports `register(program)`.
 * Add a command by adding its module here.
 */
import type { Command } from 'commander';
import { register as registerAuth } from './auth.js';
import { register as registerOffsets } from './offsets.js';
import { register as registerDemo } from './demo.js';
import { register as registerRun } from './run.js';
import { register as registerTail } from './tail.js';
import { register as registerSandbox } from './sandbox.js';
import { register as registerSignal } from './signal.js';
import { register as validateConfig } from './validate-config.js';

type Register = (program: Command) => void;

const commands: Register[] = [
  registerDemo,
  registerRun,
  validateConfig,
  registerSandbox,
  registerOffsets,
  registerSignal,
  registerAuth,
  registerTail,
];

export function registerCommands(program: Command): void {
  for (const register of commands) register(program);
}
